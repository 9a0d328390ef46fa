package inbox

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// metaPaths are the payload values a list shows, read once when a delivery
// is stored and kept in its headers (stored.HeaderRepository, stored.HeaderSender).
var metaPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// setMeta writes what a list shows of a delivery into h: its action,
// repository and sender as the ingest found them, clipped (a payload value
// may be of any size), and the payload's size.
func setMeta(h nats.Header, g ingest, size int) {
	for _, kv := range [...][2]string{
		{stored.HeaderAction, g.action},
		{stored.HeaderRepository, g.repository},
		{stored.HeaderSender, g.sender},
	} {
		if kv[1] != "" {
			h.Set(kv[0], clip.String(kv[1]))
		}
	}
	h.Set(stored.HeaderSize, strconv.Itoa(size))
}

// recordOf builds a Record from a stored message (of the inbox or the dead
// letters) and its status. data is nil for a header-only read; size is the
// payload's length then.
func recordOf(h nats.Header, data []byte, size int, seq uint64, st *stored.Status) delivery.Record {
	r := delivery.Record{
		ID:         h.Get(stored.HeaderDelivery),
		Tenant:     h.Get(stored.HeaderTenant),
		Name:       h.Get(stored.HeaderEvent),
		Action:     h.Get(stored.HeaderAction),
		Repository: h.Get(stored.HeaderRepository),
		Sender:     h.Get(stored.HeaderSender),
		Header:     stored.HTTPHeader(h),
		Payload:    data,
		Size:       int64(size),
		Seq:        seq,
		Status:     delivery.StatusQueued,
		Verified:   true,
		HTTPStatus: http.StatusAccepted,
	}
	if data != nil && h.Get(stored.HeaderSize) == "" {
		// Stored before the inbox kept these in headers.
		var found [2]jsonscan.Result
		_ = jsonscan.Lookup(data, metaPaths, found[:])
		r.Action = emitter.Event{Payload: data}.Action()
		r.Repository, r.Sender = clip.String(found[0].String(data)), clip.String(found[1].String(data))
	}
	r.ReceivedAt, _ = time.Parse(time.RFC3339Nano, h.Get(stored.HeaderReceivedAt))
	if st != nil {
		r.Status = st.Status
		r.Attempts = st.Attempts
	}
	return r
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
