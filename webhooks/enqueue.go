package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"forgehooks.dev/forgehooks/internal/clip"
)

const msgNotStored = "Could not store the delivery: try again later"

// enqueue hands a verified delivery to the inbox and answers for it: 202 once
// stored, 200 for a duplicate, 400 for a body the inbox refuses as not a JSON
// object (the inbox checks it, in its one pass over the body), 503 when the
// inbox cannot take it in time.
func (m *Middleware) enqueue(rw http.ResponseWriter, r *http.Request, d Delivery) {
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
	res, err := m.inbox.Enqueue(ctx, d)
	switch {
	case errors.Is(err, ErrInvalidPayload):
		m.reject(rw, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "emitter: "), slog.LevelWarn, "invalid payload", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
	case err != nil:
		if sw, ok := rw.(*statusWriter); ok {
			// OnResult's Err carries the cause, which the answer does not.
			sw.oc.err = fmt.Errorf("the inbox did not store the delivery: %w", err)
		}
		m.unavailable(rw, r, msgNotStored, "the inbox did not store the delivery", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "error", err)
	case res == Requeued:
		m.logger.Info("webhooks: redelivery of a dead letter; it runs again", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
		writeText(rw, http.StatusAccepted, "requeued\n")
	case res == Duplicate:
		if sw, ok := rw.(*statusWriter); ok {
			sw.oc.res.Duplicate = true
		}
		m.logger.Info("webhooks: duplicate delivery; no handler runs", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
		writeText(rw, http.StatusOK, "duplicate\n")
	default:
		writeText(rw, http.StatusAccepted, "queued\n")
	}
}

// EnqueueResult is what an inbox did with a delivery handed to it.
type EnqueueResult int

// Results of Inbox.Enqueue.
const (
	// Enqueued: stored; answered 202 "queued".
	Enqueued EnqueueResult = iota
	// Duplicate: held already (or refused as a repeat); nothing runs;
	// answered 200 "duplicate".
	Duplicate
	// Requeued: held as a dead letter, it runs again on a fresh schedule
	// (the forge was asked to redeliver it); answered 202 "requeued".
	Requeued
)

// String returns the result's name: "enqueued", "duplicate" or "requeued".
func (r EnqueueResult) String() string {
	switch r {
	case Enqueued:
		return "enqueued"
	case Duplicate:
		return "duplicate"
	case Requeued:
		return "requeued"
	}
	return fmt.Sprintf("EnqueueResult(%d)", int(r))
}
