package webhooks

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

const msgNotStored = "Could not store the delivery: try again later"

// enqueue hands a verified delivery to the inbox and answers for it: 202 once
// stored, 200 for a duplicate, 503 when the inbox cannot take it in time. A
// body that is not a JSON object is refused before it is stored.
func (m *Middleware) enqueue(rw http.ResponseWriter, r *http.Request, d Delivery) {
	if _, err := jsonscan.Scan(d.Payload); err != nil {
		err = jsonscan.InvalidPayload(emitter.ErrInvalidPayload, d.Name, d.ID, err)
		m.reject(rw, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "emitter: "), slog.LevelWarn, "invalid payload", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
		return
	}
	// Counted for Close, so that a shutdown waits for a store under way.
	f, err := m.w.inFlight.take(d.ID, int64(len(d.Payload)), 0, 0)
	if err != nil {
		m.unavailable(rw, r, msgShuttingDown, "closed", "delivery", clip.String(d.ID))
		return
	}
	defer m.w.inFlight.finish(f)
	ctx := context.WithoutCancel(r.Context())
	if m.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	var dup bool
	dup, err = m.inbox.Enqueue(ctx, d)
	switch {
	case err != nil:
		m.unavailable(rw, r, msgNotStored, "the inbox did not store the delivery", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "error", err)
	case dup:
		if sw, ok := rw.(*statusWriter); ok {
			sw.oc.res.Duplicate = true
		}
		m.logger.Info("webhooks: duplicate delivery; no handler runs", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
		writeText(rw, http.StatusOK, "duplicate\n")
	default:
		writeText(rw, http.StatusAccepted, "queued\n")
	}
}
