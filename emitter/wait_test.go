package emitter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitForErrorHandlers: under a context from WaitForErrorHandlers,
// Receive and ReportError return only after the error handlers have; under
// another they return without waiting for them.
func TestWaitForErrorHandlers(t *testing.T) {
	for _, tt := range []struct {
		name string
		wait bool
		call func(ctx context.Context, em *Emitter)
	}{
		{"Receive waits", true, func(ctx context.Context, em *Emitter) {
			em.Receive(ctx, Event{ID: "1", Name: "issues", Payload: []byte(`{}`)})
		}},
		{"ReportError waits", true, func(ctx context.Context, em *Emitter) {
			em.ReportError(ctx, &Error{Event: Event{ID: "1", Name: "issues"}, Errors: []error{errors.New("forged")}})
		}},
		{"Receive does not wait", false, func(ctx context.Context, em *Emitter) {
			em.Receive(ctx, Event{ID: "1", Name: "issues", Payload: []byte(`{}`)})
		}},
		{"ReportError does not wait", false, func(ctx context.Context, em *Emitter) {
			em.ReportError(ctx, &Error{Event: Event{ID: "1", Name: "issues"}, Errors: []error{errors.New("forged")}})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			em := New(Options{})
			em.On("issues", func(context.Context, Event) error { return errors.New("failed") })
			release := make(chan struct{})
			var returned atomic.Int32
			for range 2 {
				em.OnError(func(context.Context, *Error) {
					if !tt.wait {
						<-release
					} else {
						time.Sleep(50 * time.Millisecond)
					}
					returned.Add(1)
				})
			}
			ctx := context.Background()
			if tt.wait {
				ctx = WaitForErrorHandlers(ctx)
			}
			tt.call(ctx, em) // without waiting, this would hang were it to wait
			got := returned.Load()
			close(release)
			if tt.wait && got != 2 || !tt.wait && got != 0 {
				t.Fatalf("error handlers returned before the call did: %d", got)
			}
			em.Close(context.Background())
		})
	}
}
