package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestReconcileStatuses: deliveries the consumer acknowledged whose status
// says otherwise (queued, running, retrying: a write lost) are set
// right at the next start, without running again.
func TestReconcileStatuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wh := newWebhooks(t)
	ran := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		ran.add(info)
		return nil
	})
	in := openInbox(t, dir, Options{Receiver: wh})
	const n = 8
	for i := range n {
		id := fmt.Sprintf("rec-%d", i)
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: unique(payload("rec"), id)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "every delivery handled", func() bool {
		for i := range n {
			if r, err := in.Get(ctx, fmt.Sprintf("rec-%d", i)); err != nil || r.Status != delivery.StatusHandled {
				return false
			}
		}
		return true
	})
	// Statuses lost or left behind, as an earlier version could leave them.
	for i, s := range []delivery.Status{delivery.StatusQueued, delivery.StatusRunning, delivery.StatusRetrying} {
		r, _ := in.Get(ctx, fmt.Sprintf("rec-%d", i))
		st := &stored.Status{Seq: r.Seq, Status: s, Attempts: r.Attempts}
		if err := in.putStatus(ctx, stored.SubjectToken(r.ID), st); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := in.Get(ctx, "rec-0"); r.Status != delivery.StatusQueued {
		t.Fatalf("the stale status did not take: %v", r.Status)
	}
	in = reopen(t, in, dir)
	in.Close(ctx)
	in = openInbox(t, dir, Options{Receiver: wh})
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < n; {
		r, err := in.Get(ctx, fmt.Sprintf("rec-%d", i))
		if err == nil && r.Status == delivery.StatusHandled {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("rec-%d: %v %v after the start", i, r.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range n {
		if got := ran.get(fmt.Sprintf("rec-%d", i)); len(got) != 1 {
			t.Errorf("rec-%d ran %d times", i, len(got))
		}
	}
}
