package webhooks

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// outcome gathers one request's Result for MiddlewareOptions.OnResult. Its
// answer and, for a dispatched delivery, its handlers each call done once;
// the last of them reports, so that a 202 of the timeout is reported when the
// handlers return.
type outcome struct {
	m      *Middleware
	start  time.Time
	res    Result
	status atomic.Int32 // the status written, by statusWriter
	err    error        // the handlers' result, set before their done
	reason string       // the message of a rejection
	left   atomic.Int32
}

// done ends one of the outcome's parts, and reports the Result after the last.
func (oc *outcome) done() {
	if oc.left.Add(-1) != 0 {
		return
	}
	res := oc.res
	res.Status = int(oc.status.Load())
	res.Duration = time.Since(oc.start)
	switch {
	case oc.err != nil:
		res.Err = oc.err
	case oc.reason != "":
		res.Err = errors.New(oc.reason)
	}
	if res.Verified {
		res.Action = emitter.Event{Payload: res.Payload}.Action()
	}
	oc.m.onResult(res)
}

// statusWriter records the status a request is answered with, for its outcome.
// It does not flush by itself: canFlush and http.ResponseController find the
// writer it wraps through Unwrap.
type statusWriter struct {
	http.ResponseWriter
	oc *outcome
}

func (w *statusWriter) WriteHeader(code int) {
	w.oc.status.CompareAndSwap(0, int32(code))
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.oc.status.CompareAndSwap(0, http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the writer w wraps, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
