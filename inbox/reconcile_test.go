package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
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

// TestReconcileUnreadStatus: a status the reconciliation cannot read (here
// its context ended, as Close ends it) is left alone, not taken for none
// and written over as a bare "handled" that forgets its attempts.
func TestReconcileUnreadStatus(t *testing.T) {
	ctx := context.Background()
	wh := newWebhooks(t)
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "unread", Name: "issues", Payload: payload("unread")}); err != nil {
		t.Fatal(err)
	}
	var r delivery.Record
	waitFor(t, 30*time.Second, "the delivery handled", func() bool {
		var err error
		r, err = in.Get(ctx, "unread")
		return err == nil && r.Status == delivery.StatusHandled
	})
	m, err := in.inbox.GetMsg(ctx, r.Seq)
	if err != nil {
		t.Fatal(err)
	}
	// The status is read from the store, not from the writes still
	// waiting for their acknowledgement (served from memory, whatever the
	// context).
	if err := in.status.(*recstore.Indexed).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	in.mu.Lock()
	runner := in.started
	in.mu.Unlock()
	if fixed, err := runner.reconcileOne(ended, m.Header, m.Subject, r.Seq); fixed || err == nil {
		t.Errorf("reconcileOne with its context ended: fixed %v, error %v; want no write and the error", fixed, err)
	}
	got, err := in.Get(ctx, "unread")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusHandled || len(got.Attempts) != len(r.Attempts) || len(got.Attempts) == 0 {
		t.Errorf("after the reconciliation: %s with %d attempts, want handled with %d", got.Status, len(got.Attempts), len(r.Attempts))
	}
}
