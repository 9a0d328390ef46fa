package inbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestAttemptNumbersGoOn: when the server's delivery count is behind the
// attempts recorded in the status (the count lost in a crash, the status
// written), the next attempt is numbered after the recorded ones: no number
// appears twice. The status is written while no runner runs (the retry is an
// hour away, then the inbox is open without a Receiver), so that the retry
// cannot read the status before it is written.
func TestAttemptNumbersGoOn(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := newSeen()
	handlers := func() *webhooks.Webhooks {
		wh := newWebhooks(t)
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			info, _ := webhooks.DeliveryFrom(ctx)
			s.add(info)
			if info.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		})
		return wh
	}
	delays := []time.Duration{time.Hour}
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: handlers(), RetryDelays: delays, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "x", Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first attempt's status", func() bool {
		r, err := in.Get(ctx, "x")
		return err == nil && r.Status == delivery.StatusRetrying
	})
	in.Close(ctx)

	// As after a crash in which the server's count of deliveries was lost
	// but the status of attempts 1 to 3 was written.
	in, err = Open(ctx, Options{Dir: dir, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.putStatus(ctx, subjectToken("x"), &status{Status: delivery.StatusRetrying, Attempts: []delivery.Attempt{{Number: 1}, {Number: 2}, {Number: 3}}}); err != nil {
		t.Fatal(err)
	}
	in.Close(ctx)

	// The last recorded attempt has no delay left in the schedule: the
	// start hands the waiting retry back, and it runs at once.
	in = openInbox(t, dir, Options{Receiver: handlers(), RetryDelays: delays})
	waitFor(t, 10*time.Second, "the retry", func() bool { return len(s.get("x")) == 2 })
	if got := s.get("x")[1].Attempt; got != 4 {
		t.Errorf("the retry ran as attempt %d, want 4", got)
	}
	waitHandled(t, in, "x", 10*time.Second)
	r, _ := in.Get(ctx, "x")
	var nums []int
	for _, a := range r.Attempts {
		nums = append(nums, a.Number)
	}
	if len(nums) != 4 || nums[3] != 4 {
		t.Errorf("attempts %v, want 1 2 3 4", nums)
	}
}

// TestAttemptNumbersSurviveLostCount: a delivery whose first attempt failed,
// after a restart in which the server lost its consumer's state (its count of
// deliveries starts again at 1), runs as attempt 2, and its history keeps
// attempt 1.
func TestAttemptNumbersSurviveLostCount(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	wh := newWebhooks(t)
	wh.OnAny(func(context.Context, emitter.Event) error { return errors.New("down") })
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, RetryDelays: []time.Duration{time.Hour}, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "x", Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first attempt's status", func() bool {
		r, err := in.Get(ctx, "x")
		return err == nil && r.Status == delivery.StatusRetrying
	})
	// The worst a crash can do to the consumer: lose it whole.
	if err := in.inbox.DeleteConsumer(ctx, DefaultName+"_WORKERS"); err != nil {
		t.Fatal(err)
	}
	in.Close(ctx)

	wh2 := newWebhooks(t)
	s := newSeen()
	wh2.OnAny(func(ctx context.Context, _ emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in = openInbox(t, dir, Options{Receiver: wh2})
	waitFor(t, 10*time.Second, "the run after the restart", func() bool { return len(s.get("x")) == 1 })
	if got := s.get("x")[0].Attempt; got != 2 {
		t.Errorf("ran as attempt %d, want 2", got)
	}
	waitHandled(t, in, "x", 10*time.Second)
	r, _ := in.Get(ctx, "x")
	if len(r.Attempts) != 2 || r.Attempts[0].Number != 1 || r.Attempts[0].Err == "" || r.Attempts[1].Number != 2 {
		t.Errorf("attempts %+v, want #1 (failed) and #2", r.Attempts)
	}
}

// TestAttemptNumbersCountRuns: deliveries the server handed out that never
// reached a handler (here taken from the workers' consumer and dropped, as
// when they reach a pull request that had ended) count as no attempt: the
// first run is attempt 1, a failure gets the first retry delay (not the
// dead letters), and the retry is attempt 2.
func TestAttemptNumbersCountRuns(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// A first start creates the workers' consumer.
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: newWebhooks(t), Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	in.Close(ctx)

	in, err = Open(ctx, Options{Dir: dir, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "x", Name: "issues", Payload: []byte(`{"action":"opened"}`)}); err != nil {
		t.Fatal(err)
	}
	cons, err := in.inbox.Consumer(ctx, in.workersConsumer())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		// Handed out, never run, never settled; the next start hands the
		// lease back at once.
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var got int
		for range batch.Messages() {
			got++
		}
		if got != 1 {
			t.Fatalf("fetched %d deliveries (%v), want 1", got, batch.Error())
		}
		in.Close(ctx)
		in, err = Open(ctx, Options{Dir: dir, Logger: quiet(t)})
		if err != nil {
			t.Fatal(err)
		}
		if cons, err = in.inbox.Consumer(ctx, in.workersConsumer()); err != nil {
			t.Fatal(err)
		}
		newRunner(in).recoverLeases(ctx, cons)
	}
	in.Close(ctx)

	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, _ emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		if info.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	in = openInbox(t, dir, Options{Receiver: wh, RetryDelays: []time.Duration{50 * time.Millisecond}})
	waitHandled(t, in, "x", 10*time.Second)
	var nums []int
	for _, info := range s.get("x") {
		nums = append(nums, info.Attempt)
	}
	if len(nums) != 2 || nums[0] != 1 || nums[1] != 2 {
		t.Errorf("ran as attempts %v, want 1 2", nums)
	}
	r, _ := in.Get(ctx, "x")
	if len(r.Attempts) != 2 || r.Attempts[0].Number != 1 || r.Attempts[1].Number != 2 {
		t.Errorf("recorded attempts %+v, want #1 and #2", r.Attempts)
	}
}
