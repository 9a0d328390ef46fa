package inbox

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestFinalErrorDeadAtOnce: a delivery whose handlers' error is final
// (webhooks.Permanent) is a dead letter after that attempt, with retries
// left on its schedule; one that also failed with an error that may heal is
// retried until only final errors are left. A final dead letter runs again
// when an operator retries it.
func TestFinalErrorDeadAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// also adds a second handler that fails on attempt 1 only.
		alsoTransient bool
		// ordered runs the deliveries one at a time per repository: a
		// later delivery of the key runs once the final one is dead.
		ordered      bool
		wantAttempts int
	}{
		{"final", false, false, 1},
		{"final beside one that heals", true, false, 2},
		{"final, ordered", false, true, 1},
		{"final beside one that heals, ordered", true, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wh := newWebhooks(t)
			var runs, healed atomic.Int32
			var fail atomic.Bool
			fail.Store(true)
			var later atomic.Int32
			wh.On("push", func(ctx context.Context, e emitter.Event) error {
				later.Add(1)
				return nil
			})
			wh.On("issues", func(ctx context.Context, e emitter.Event) error {
				runs.Add(1)
				if fail.Load() {
					return webhooks.Permanent(errors.New("no"))
				}
				return nil
			})
			if tt.alsoTransient {
				wh.On("issues", func(ctx context.Context, e emitter.Event) error {
					if d, _ := webhooks.DeliveryFrom(ctx); d.Attempt == 1 {
						return errors.New("downstream unavailable")
					}
					healed.Add(1)
					return nil
				})
			}
			// Retries come at once: a retry the final error did not stop
			// would show in the attempts before the dead letter does.
			o := Options{Receiver: wh, RetryDelays: []time.Duration{0, 0, 0}}
			if tt.ordered {
				o.OrderBy = ByRepository
			}
			in := openInbox(t, t.TempDir(), o)
			var final atomic.Int32
			defer in.Watch(func(r delivery.Record) {
				if r.Status == delivery.StatusDead && r.Final() {
					final.Add(1)
				}
			})()
			srv := receiver(t, wh, in)
			code, body, err := post(t, srv.Client(), srv.URL, "issues", "p-1", []byte(`{"action":"opened","repository":{"id":42}}`), testSecret)
			if err != nil || code != 202 {
				t.Fatalf("answer %d %q %v, want 202", code, body, err)
			}
			// A later delivery of the same repository: ordered, it runs
			// once the final one is a dead letter.
			code, body, err = post(t, srv.Client(), srv.URL, "push", "p-2", []byte(`{"ref":"main","repository":{"id":42}}`), testSecret)
			if err != nil || code != 202 {
				t.Fatalf("answer %d %q %v, want 202", code, body, err)
			}
			waitHandled(t, in, "p-2", 20*time.Second)
			ctx := context.Background()
			waitFor(t, 20*time.Second, "a dead letter", func() bool {
				d, _ := in.Dead(ctx)
				return len(d) == 1
			})
			dead, err := in.Dead(ctx)
			if err != nil || len(dead) != 1 {
				t.Fatal(dead, err)
			}
			r := dead[0]
			if len(r.Attempts) != tt.wantAttempts || !r.Final() || r.LastError() != "no" {
				t.Fatalf("dead letter: %d attempts %+v, final %v; want %d, the last final with error \"no\"", len(r.Attempts), r.Attempts, r.Final(), tt.wantAttempts)
			}
			for _, a := range r.Attempts[:len(r.Attempts)-1] {
				if a.Final {
					t.Errorf("attempt %d is final: a retry followed it", a.Number)
				}
			}
			if n := runs.Load(); int(n) != tt.wantAttempts {
				t.Errorf("the final handler ran %d times, want %d", n, tt.wantAttempts)
			}
			if got, _ := in.Get(ctx, "p-1"); got.Status != delivery.StatusDead || !got.Final() {
				t.Errorf("Get: status %q, final %v", got.Status, got.Final())
			}
			waitFor(t, 10*time.Second, "the watchers told of the final dead letter", func() bool { return final.Load() == 1 })

			// Retried by an operator, it runs again: final is about the
			// error, not the delivery.
			fail.Store(false)
			if err := in.Retry(ctx, "p-1"); err != nil {
				t.Fatal(err)
			}
			waitHandled(t, in, "p-1", 20*time.Second)
			if got, _ := in.Get(ctx, "p-1"); got.Final() || len(got.Attempts) != tt.wantAttempts+1 {
				t.Errorf("after Retry: final %v, %d attempts; want false, %d", got.Final(), len(got.Attempts), tt.wantAttempts+1)
			}
			if tt.alsoTransient && healed.Load() == 0 {
				t.Error("the handler that heals never succeeded")
			}
		})
	}
}
