package runner

import (
	"context"
	"time"
)

// Handover starts a Runner in r's place once r's handlers have returned,
// for an intake whose store restarted (StopTaking was called on r): a
// delivery never runs in two Runners of one process at once, and the
// successor hands back the leases r held, settled or not. It logs each
// minute while handlers that ignore their context hold it back.
//
// swap puts next in prev's place, false when it must not start (the intake
// closed, or another Handover replaced prev): Handover returns then. A
// successor that cannot start is ended and another tried a second later,
// each on a fresh cfg(), until closing is closed.
func (r *Runner) Handover(cfg func() Config, swap func(prev, next *Runner) bool, closing <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		r.Wait()
		close(done)
	}()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for waited := false; !waited; {
		select {
		case <-done:
			waited = true
		case <-t.C:
			r.cfg.Logger.Warn("inbox: handlers from before the store restarted still run; the workers start again once they return")
		case <-closing:
			return
		}
	}
	prev := r
	for {
		next := New(cfg())
		if !swap(prev, next) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := next.Start(ctx)
		cancel()
		if err == nil {
			return
		}
		next.cfg.Logger.Warn("inbox: starting the workers again after the store restarted", "error", err)
		next.StopTaking()
		next.Wait()
		select {
		case <-closing:
			return
		case <-time.After(time.Second):
		}
		prev = next
	}
}
