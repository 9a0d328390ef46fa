package inbox

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/emitter"
)

// Statuses of a Record.
const (
	// StatusQueued: stored, no attempt finished yet.
	StatusQueued = "queued"
	// StatusRunning: its handlers are running in this process.
	StatusRunning = "running"
	// StatusHandled: an attempt succeeded.
	StatusHandled = "handled"
	// StatusRetrying: an attempt failed; another is scheduled.
	StatusRetrying = "retrying"
	// StatusDead: every attempt failed, or the message is not a delivery;
	// it waits in the dead letters for Retry.
	StatusDead = "dead"
)

// Record is one stored delivery as the queries return it.
type Record struct {
	// ID is the delivery id; empty for a delivery stored without one.
	ID string
	// Event is the event name; Action the payload's top-level "action".
	Event, Action string
	// Header holds the request's headers as stored (see the package
	// documentation for those dropped).
	Header http.Header
	// Payload is the body, byte for byte.
	Payload []byte
	// ReceivedAt is when the delivery arrived.
	ReceivedAt time.Time
	// Status is one of StatusQueued, StatusRunning, StatusHandled,
	// StatusRetrying and StatusDead.
	Status string
	// Attempts are the finished runs of its handlers, oldest first (the
	// most recent 50).
	Attempts []Attempt
	// Seq is the delivery's sequence in the inbox stream (its latest copy,
	// after a Retry or Replay); 0 for a dead letter whose stored copy aged
	// out.
	Seq uint64
}

// Attempt is one run of a delivery's handlers.
type Attempt struct {
	// Number counts the runs of the delivery, from 1.
	Number int
	// Start is when the run began; Duration how long it took.
	Start    time.Time
	Duration time.Duration
	// Err is the run's error, with the stack of a panic; empty on success.
	Err string
}

// maxAttemptsKept bounds the attempts a status keeps.
const maxAttemptsKept = 50

// status is what the status bucket holds for a delivery.
type status struct {
	Seq      uint64    `json:"seq"`
	Status   string    `json:"status"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

func (st *status) add(a Attempt) {
	st.Attempts = append(st.Attempts, a)
	if len(st.Attempts) > maxAttemptsKept {
		st.Attempts = append([]Attempt(nil), st.Attempts[len(st.Attempts)-maxAttemptsKept:]...)
	}
}

func (st *status) marshal() []byte {
	b, _ := json.Marshal(st)
	return b
}

// subjectToken is the last subject token of a delivery with id: the id in
// base64url (subjects and keys allow its alphabet; the id may hold anything),
// or its SHA-256 when long; "n" for a delivery without an id.
func subjectToken(id string) string {
	if id == "" {
		return "n"
	}
	if len(id) > 96 {
		sum := sha256.Sum256([]byte(id))
		return "h" + hex.EncodeToString(sum[:])
	}
	return "i" + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// statusKey is a stored message's key in the status bucket: its delivery's
// token, or for a delivery without an id its first sequence.
func statusKey(h nats.Header, subjToken string, seq uint64) string {
	if k := h.Get(hdrKey); k != "" {
		return k
	}
	if subjToken == "n" {
		return "s" + strconv.FormatUint(seq, 10)
	}
	return subjToken
}

// recordOf builds a Record from a stored message (of the inbox or the dead
// letters) and its status.
func recordOf(h nats.Header, data []byte, seq uint64, st *status) Record {
	r := Record{
		ID:      h.Get(hdrDelivery),
		Event:   h.Get(hdrEvent),
		Header:  headerOf(h),
		Payload: data,
		Seq:     seq,
		Status:  StatusQueued,
	}
	r.Action = emitter.Event{Payload: data}.Action()
	r.ReceivedAt, _ = time.Parse(time.RFC3339Nano, h.Get(hdrReceivedAt))
	if st != nil {
		r.Status = st.Status
		r.Attempts = st.Attempts
	}
	return r
}
