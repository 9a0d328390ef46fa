package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
)

// receive runs the handlers of an accepted delivery, then ends its flight
// (before the answer, so that the answer sees its place free), which also
// tells Close it is done.
func (m *Middleware) receive(ctx context.Context, d Delivery, f *flight, oc *outcome) error {
	err := m.w.emit(ctx, d, true) // the body readBody made for d alone
	m.w.inFlight.finish(f)
	if oc != nil {
		oc.err = err
		oc.done()
	}
	if errors.Is(err, emitter.ErrClosed) {
		// Only when Close gave up waiting (its context ended) before this
		// delivery's handlers started.
		m.logger.Error("webhooks: delivery dropped: closed before its handlers ran", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
	}
	return err
}

// receiveInline runs the handlers on the request's goroutine. When they take
// longer than the timeout, a timer answers 202 from its own goroutine, with
// Connection: close so that the client does not send its next request on a
// connection whose handler has not returned, and flushes it to the client.
func (m *Middleware) receiveInline(ctx context.Context, rw http.ResponseWriter, r *http.Request, d Delivery, f *flight, oc *outcome) {
	var late *lateAnswer
	if m.timeout > 0 {
		late = m.startLate(rw, r, d)
	}
	err := m.receive(ctx, d, f, oc)
	if late != nil && !late.finish() {
		return // answered 202 already
	}
	if r.Context().Err() != nil {
		m.logger.Info("webhooks: client went away before the answer; handlers ran to the end", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
	}
	m.answer(rw, r, d, err)
}

// lateAnswer is the 202 that receiveInline's timer writes when the handlers
// outlast the timeout, and the lock that makes it and the handlers' own answer
// exclusive: whichever comes first answers.
type lateAnswer struct {
	m     *Middleware
	rw    http.ResponseWriter
	r     *http.Request
	d     Delivery
	timer *time.Timer
	mu    sync.Mutex
	done  bool // an answer was written, or the handlers returned first
}

// lateAnswers holds lateAnswer values, each with its timer, whose timer never
// ran: a delivery answered in time gives its own back, so that the common case
// allocates neither.
var lateAnswers sync.Pool

// startLate arms the 202 of rw's delivery d, to be written after m.timeout
// unless finish comes first.
func (m *Middleware) startLate(rw http.ResponseWriter, r *http.Request, d Delivery) *lateAnswer {
	a, _ := lateAnswers.Get().(*lateAnswer)
	if a == nil {
		a = new(lateAnswer)
	}
	a.m, a.rw, a.r, a.d, a.done = m, rw, r, d, false
	if a.timer == nil {
		a.timer = time.AfterFunc(m.timeout, a.answer)
	} else {
		a.timer.Reset(m.timeout)
	}
	return a
}

// answer writes the 202, unless the handlers have returned.
func (a *lateAnswer) answer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	a.done = true
	// This runs on the timer's goroutine, where net/http does not recover a
	// panic as it does on the request's: a writer that panics (say, a wrapper
	// whose Flush asserts a Flusher it wraps) must cost this answer, not the
	// process.
	defer func() {
		if v := recover(); v != nil {
			a.m.logger.Error("webhooks: writing the 202 panicked", "delivery", clip.String(a.d.ID), "event", clip.String(a.d.Name), "panic", fmt.Sprint(v))
		}
	}()
	a.m.stillProcessing(a.r, a.d)
	a.rw.Header().Set("Connection", "close")
	writeText(a.rw, http.StatusAccepted, "still processing\n")
	http.NewResponseController(a.rw).Flush()
}

// finish stops the timer and reports whether the handlers' answer is still to
// be written; when the timer is answering, it waits until the 202 is written.
func (a *lateAnswer) finish() bool {
	if a.timer.Stop() {
		// The timer never ran, and now never will: nothing else holds a,
		// and the handlers' answer is to be written.
		a.m, a.rw, a.r, a.d = nil, nil, nil, Delivery{}
		lateAnswers.Put(a)
		return true
	}
	// The timer has started answer, which may not hold the lock yet: a stays
	// out of the pool, since that call may still read it.
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return false
	}
	a.done = true
	return true
}

// canFlush reports whether rw, or a writer it wraps, can flush: the 202 of a
// timeout written by another goroutine reaches the client only if it can.
func canFlush(rw http.ResponseWriter) bool {
	for {
		switch w := rw.(type) {
		case http.Flusher, interface{ FlushError() error }:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			rw = w.Unwrap()
		default:
			return false
		}
	}
}

// receiveHandedOff runs the handlers on another goroutine while this one
// waits for them, for the timeout, and for the client to go away.
func (m *Middleware) receiveHandedOff(ctx context.Context, rw http.ResponseWriter, r *http.Request, d Delivery, f *flight, oc *outcome) {
	done := make(chan error, 1)
	m.workers.run(func() { done <- m.receive(ctx, d, f, oc) })
	var timeout <-chan time.Time
	if m.timeout > 0 {
		t := time.NewTimer(m.timeout)
		defer t.Stop()
		timeout = t.C
	}
	// net/http cancels the request's context when it reads the end of the
	// connection, which a client that only half-closed it also causes. So the
	// answer does not depend on it: it is written when the handlers are done or
	// the timeout passes, whether or not anyone still reads it. (Answering at
	// once would race with a result already there, and leave net/http to send
	// an empty 200.) The wait is bounded by Timeout, as for any request.
	gone := r.Context().Done()
	for {
		select {
		case err := <-done:
			m.answer(rw, r, d, err)
			return
		case <-timeout:
			m.stillProcessing(r, d)
			writeText(rw, http.StatusAccepted, "still processing\n")
			return
		case <-gone:
			m.logger.Info("webhooks: client went away; handlers go on", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
			gone = nil
		}
	}
}

// stillProcessing logs the 202 answered when the handlers outlast the
// timeout: a warning once half the places are taken by running handlers, so
// that hanging handlers show in the default log before deliveries are refused.
func (m *Middleware) stillProcessing(r *http.Request, d Delivery) {
	level, n := slog.LevelInfo, int64(m.InFlight())
	if m.maxInFlight > 0 && 2*n >= m.maxInFlight {
		level = slog.LevelWarn
	}
	m.logger.Log(r.Context(), level, "webhooks: handlers still running; answered 202", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "timeout", m.timeout, "in_flight", n, "max_in_flight", m.maxInFlight)
}
