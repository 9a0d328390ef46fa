package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestKeysWatchFallsBehind: in a cluster's mode (no directory lock), the
// watch of the order keys loses its consumer on the server, as when the
// server holding it is killed. A failed ordered delivery is given back due
// after its 20 ms retry delay; this runner's copy of its record still says
// leased by itself for AckWait (30 s), so it runs again only once the
// watch is started again: within a few seconds, not after the lease nor
// after the watch's missed heartbeats.
func TestKeysWatchFallsBehind(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	h := newHarness(t, func(webhooks.Delivery) error {
		if runs.Add(1) == 1 {
			return errFail
		}
		return nil
	}, func(c *Config) {
		c.OrderBy, c.Embedded, c.AckWait = byRepo, false, 30*time.Second
	}, true)
	ctx := context.Background()
	st, err := h.js.Stream(ctx, "KV_"+testName+"_KEYS")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the watch's consumer", func() bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Consumers > 0
	})
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if err := st.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.store("a1", "key:a")
	h.waitStatus("a1", delivery.StatusHandled)
	took := time.Since(start)
	t.Logf("handled %v after it was stored, its first attempt failed", took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("the retry ran %v after the delivery was stored, want within 8 s", took)
	}
}
