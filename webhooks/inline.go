package webhooks

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
)

// ErrAnswered is returned by Receive and VerifyAndReceive when called, with
// no handler run, under the context of a delivery an Inline Middleware has
// answered already; it is also that context's cause (context.Cause) from the
// answer on. On a function platform nothing runs after the answer, so work
// started then would be frozen halfway or never done.
var ErrAnswered = errors.New("webhooks: the delivery was answered already (inline mode): nothing may start after the answer")

// WorkerInbox is an Inbox that tells whether it also runs the handlers of the
// deliveries it stores in this process. An Inline Middleware refuses an Inbox
// whose RunsWorkers reports true: its workers would run after the answer.
type WorkerInbox interface {
	Inbox
	RunsWorkers() bool
}

// checkInline panics when opts would leave work running after an answer of an
// Inline Middleware.
func (m *Middleware) checkInline(opts MiddlewareOptions) {
	switch wi, ok := opts.Inbox.(WorkerInbox); {
	case opts.Inbox == nil && opts.Timeout > 0:
		panic("webhooks: NewMiddleware: Inline with a positive Timeout would answer 202 while handlers go on; leave Timeout zero (the platform's own timeout bounds the request)")
	case ok && wi.RunsWorkers():
		panic("webhooks: NewMiddleware: Inline with an Inbox that runs workers in this process, which would run after the answer; open the inbox without workers and run them elsewhere")
	}
	m.inline = true
	if opts.Inbox == nil {
		m.timeout = -1 // wait for the handlers however long
	}
}

type answeredKey struct{}

// answeredOf returns the flag an Inline Middleware set in ctx, if any.
func answeredOf(ctx context.Context) *atomic.Bool {
	a, _ := ctx.Value(answeredKey{}).(*atomic.Bool)
	return a
}

// receiveBeforeAnswer runs the handlers of an Inline Middleware's delivery on
// the request's goroutine, and their error handlers, then answers; from then
// on the handlers' context is canceled and refuses further dispatch.
func (m *Middleware) receiveBeforeAnswer(ctx context.Context, rw http.ResponseWriter, r *http.Request, d Delivery, f *flight, oc *outcome) {
	answered := new(atomic.Bool)
	ctx, cancel := context.WithCancelCause(context.WithValue(emitter.WaitForErrorHandlers(ctx), answeredKey{}, answered))
	err := m.receive(ctx, d, f, oc)
	m.answer(rw, r, d, err)
	answered.Store(true)
	cancel(ErrAnswered)
}

// refuseAnswered reports ErrAnswered, and logs it, when ctx belongs to a
// delivery an Inline Middleware has answered.
func (w *Webhooks) refuseAnswered(ctx context.Context, d Delivery) error {
	if a := answeredOf(ctx); a != nil && a.Load() {
		w.Logger().Error("webhooks: dispatch after the answer refused (inline mode)", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
		return ErrAnswered
	}
	return nil
}
