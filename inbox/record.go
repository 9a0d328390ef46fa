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

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// maxAttemptsKept bounds the attempts a status keeps.
const maxAttemptsKept = 50

// status is what the status bucket holds for a delivery.
type status struct {
	Seq      uint64             `json:"seq"`
	Status   delivery.Status    `json:"status"`
	Attempts []delivery.Attempt `json:"attempts,omitempty"`
}

func (st *status) add(a delivery.Attempt) {
	st.Attempts = append(st.Attempts, a)
	if len(st.Attempts) > maxAttemptsKept {
		st.Attempts = append([]delivery.Attempt(nil), st.Attempts[len(st.Attempts)-maxAttemptsKept:]...)
	}
}

// last is the number of the last attempt recorded; 0 when none.
func (st *status) last() int {
	if st == nil || len(st.Attempts) == 0 {
		return 0
	}
	return st.Attempts[len(st.Attempts)-1].Number
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

// metaPaths are the payload values a list shows, read once when a delivery
// is stored and kept in its headers (hdrRepository, hdrSender).
var metaPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// setMeta writes what a list shows of a delivery into h: its action,
// repository and sender as the ingest found them, clipped (a payload value
// may be of any size), and the payload's size.
func setMeta(h nats.Header, g ingest, size int) {
	for _, kv := range [...][2]string{
		{hdrAction, g.action},
		{hdrRepository, g.repository},
		{hdrSender, g.sender},
	} {
		if kv[1] != "" {
			h.Set(kv[0], clip.String(kv[1]))
		}
	}
	h.Set(hdrSize, strconv.Itoa(size))
}

// recordOf builds a Record from a stored message (of the inbox or the dead
// letters) and its status. data is nil for a header-only read; size is the
// payload's length then.
func recordOf(h nats.Header, data []byte, size int, seq uint64, st *status) delivery.Record {
	r := delivery.Record{
		ID:         h.Get(hdrDelivery),
		Tenant:     h.Get(hdrTenant),
		Name:       h.Get(hdrEvent),
		Action:     h.Get(hdrAction),
		Repository: h.Get(hdrRepository),
		Sender:     h.Get(hdrSender),
		Header:     headerOf(h),
		Payload:    data,
		Size:       int64(size),
		Seq:        seq,
		Status:     delivery.StatusQueued,
		Verified:   true,
		HTTPStatus: http.StatusAccepted,
	}
	if data != nil && h.Get(hdrSize) == "" {
		// Stored before the inbox kept these in headers.
		var found [2]jsonscan.Result
		_ = jsonscan.Lookup(data, metaPaths, found[:])
		r.Action = emitter.Event{Payload: data}.Action()
		r.Repository, r.Sender = clip.String(found[0].String(data)), clip.String(found[1].String(data))
	}
	r.ReceivedAt, _ = time.Parse(time.RFC3339Nano, h.Get(hdrReceivedAt))
	if st != nil {
		r.Status = st.Status
		r.Attempts = st.Attempts
	}
	return r
}

// deliveryKey is what a delivery is known by in the inbox (its subject
// token, status and dedupe record): its id, or with a tenant "tenant/id", so
// that two tenants' hooks may receive one delivery id and each is stored.
// Tenant names hold no slash (webhooks.ValidTenantName); Get, Retry and
// Replay take this key ("acme/<id>") for a tenant's delivery.
func deliveryKey(tenant, id string) string {
	if tenant == "" || id == "" {
		return id
	}
	return tenant + "/" + id
}

// tenantDigest is the replay guard's digest of a body: per tenant, since one
// event sent to two tenants' hooks comes with the same body.
func tenantDigest(tenant string, body []byte) string {
	if tenant == "" {
		return bodyDigest(body)
	}
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
