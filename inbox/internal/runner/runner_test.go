package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestRunsOnce: a stored delivery, ordered or not, runs once with the
// delivery as stored (id, name, payload, the request's headers, its
// attempt), and its status says handled with that attempt.
func TestRunsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, key string }{{"unordered", ""}, {"ordered", "key:a"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, func(c *Config) { c.OrderBy = byRepo }, true)
			h.store("a1", tc.key)
			st := h.waitStatus("a1", delivery.StatusHandled)
			if len(st.Attempts) != 1 || st.Attempts[0].Number != 1 || st.Attempts[0].Err != "" {
				t.Errorf("attempts %+v, want #1 without an error", st.Attempts)
			}
			ran := h.ran("a1")
			if len(ran) != 1 {
				t.Fatalf("ran %d times, want once", len(ran))
			}
			d := ran[0]
			if d.Name != "issues" || d.Attempt != 1 || string(d.Payload) != `{"action":"opened"}` || d.Header.Get("X-Test") != "kept" ||
				d.Header.Get(webhooks.HeaderDelivery) != "a1" || d.ReceivedAt.IsZero() {
				t.Errorf("the delivery handed to Handle: %+v", d)
			}
		})
	}
}

// TestRetriesThenDead: a delivery whose handlers always fail runs once and
// once more per retry delay, numbered on, then is a dead letter with the
// last error; ordered or not.
func TestRetriesThenDead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, key string }{{"unordered", ""}, {"ordered", "key:b"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(webhooks.Delivery) error { return errFail }, func(c *Config) {
				c.OrderBy = byRepo
				c.RetryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
			}, true)
			h.store("b1", tc.key)
			st := h.waitStatus("b1", delivery.StatusDead)
			if len(st.Attempts) != 3 {
				t.Fatalf("attempts %+v, want 3", st.Attempts)
			}
			for i, a := range st.Attempts {
				if a.Number != i+1 || !strings.Contains(a.Err, errFail.Error()) {
					t.Errorf("attempt %d: %+v", i+1, a)
				}
			}
			if r := h.intake.reason("b1"); !strings.Contains(r, errFail.Error()) {
				t.Errorf("the dead letter's reason %q, want the last error", r)
			}
			var nums []int
			for _, d := range h.ran("b1") {
				nums = append(nums, d.Attempt)
			}
			if len(nums) != 3 || nums[0] != 1 || nums[2] != 3 {
				t.Errorf("Handle saw attempts %v, want 1 2 3", nums)
			}
		})
	}
}

// TestCheckRefusedIsDeadAtOnce: a delivery the intake's Check refuses (a
// seal that does not match, say) is a dead letter at once with Check's
// error as its reason, without a handler run or a retry; ordered or not,
// and the later deliveries of its key go on.
func TestCheckRefusedIsDeadAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, key string }{{"unordered", ""}, {"ordered", "key:c"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			refused := errors.New("inbox: the seal does not match")
			h := newHarness(t, nil, func(c *Config) { c.OrderBy = byRepo }, false)
			h.intake.check = func(hd nats.Header, _ []byte) error {
				if hd.Get(stored.HeaderDelivery) == "c1" {
					return refused
				}
				return nil
			}
			if err := h.r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			h.store("c1", tc.key)
			h.store("c2", tc.key)
			st := h.waitStatus("c1", delivery.StatusDead)
			if len(st.Attempts) != 1 || st.Attempts[0].Err != refused.Error() {
				t.Errorf("attempts %+v, want one with the refusal", st.Attempts)
			}
			if r := h.intake.reason("c1"); r != refused.Error() {
				t.Errorf("the dead letter's reason %q, want %q", r, refused)
			}
			h.waitStatus("c2", delivery.StatusHandled)
			if n := len(h.ran("c1")); n != 0 {
				t.Errorf("the refused delivery ran %d times", n)
			}
		})
	}
}

// TestRetries: the one decision of whether a failed attempt runs again:
// while the schedule has a delay left, unless the error is final.
func TestRetries(t *testing.T) {
	t.Parallel()
	r := New(Config{Workers: 1, RetryDelays: []time.Duration{time.Second, time.Minute}})
	final := webhooks.Permanent(errFail)
	for _, tc := range []struct {
		err   error
		tries int
		want  bool
	}{{errFail, 1, true}, {errFail, 2, true}, {errFail, 3, false}, {errFail, 9, false}, {final, 1, false}, {fmt.Errorf("wrapped: %w", final), 1, false}} {
		if got := r.retries(tc.err, tc.tries); got != tc.want {
			t.Errorf("retries after try %d with %v: %v, want %v", tc.tries, tc.err, got, tc.want)
		}
	}
}

// TestFinalIsDeadAtOnce: a final error (webhooks.Permanent) makes the
// delivery a dead letter after that attempt, with retries left; ordered or
// not, and the later deliveries of its key go on.
func TestFinalIsDeadAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, key string }{{"unordered", ""}, {"ordered", "key:f"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(d webhooks.Delivery) error {
				if d.ID == "f1" {
					return webhooks.Permanent(errFail)
				}
				return nil
			}, func(c *Config) {
				c.OrderBy = byRepo
				c.RetryDelays = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
			}, true)
			h.store("f1", tc.key)
			h.store("f2", tc.key)
			st := h.waitStatus("f1", delivery.StatusDead)
			if len(st.Attempts) != 1 || !st.Attempts[0].Final {
				t.Errorf("attempts %+v, want one, final", st.Attempts)
			}
			h.waitStatus("f2", delivery.StatusHandled)
			if n := len(h.ran("f1")); n != 1 {
				t.Errorf("ran %d times, want once", n)
			}
		})
	}
}

// TestReconcileUnreadStatus: a status the reconciliation cannot read is
// not taken for none, and written over as a bare "handled" that forgets
// its attempts.
func TestReconcileUnreadStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, true)
	seq := h.store("r1", "")
	before := h.waitStatus("r1", delivery.StatusHandled)
	m, err := h.inbox.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ctx     func() context.Context
		failing bool
	}{
		{"its context ended", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, false},
		{"the store not answering", context.Background, true},
	} {
		h.intake.failing.Store(tc.failing)
		puts := h.intake.puts.Load()
		if fixed, err := h.r.reconcileOne(tc.ctx(), m.Header, m.Subject, seq); fixed || err == nil {
			t.Errorf("%s: fixed %v, error %v; want no write and the error", tc.name, fixed, err)
		}
		if n := h.intake.puts.Load() - puts; n != 0 {
			t.Errorf("%s: %d statuses written", tc.name, n)
		}
	}
	h.intake.failing.Store(false)
	if got, _ := h.intake.status("r1"); got.Status != delivery.StatusHandled || len(got.Attempts) != len(before.Attempts) {
		t.Errorf("after the reconciliation: %+v, want %+v", got, before)
	}
}

// TestStatusUnreadIsNotNone: a delivery handled already comes back to a
// runner (its key's record naming it again after a crash, or its
// partition or the workers' consumer handing it out again) while its status
// cannot be read. It must not run again: for an ordered delivery that run
// would come after the later deliveries of its key. Once the status can be
// read, it is found handled and settled without a run.
func TestStatusUnreadIsNotNone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		ordered bool
		// back brings the handled delivery at seq back to the runner.
		back func(t *testing.T, h *harness, seq uint64) (settle func())
	}{
		{"the head of its key's record", true, headAgain},
		{"admitted again by its partition", true, admittedAgain},
		{"handed out again to the workers", false, handedOutAgain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			h := newHarness(t, func(webhooks.Delivery) error { runs.Add(1); return nil }, func(c *Config) { c.OrderBy = byRepo }, true)
			key := ""
			if tt.ordered {
				key = "key:u"
			}
			seq := h.store("u1", key)
			h.waitStatus("u1", delivery.StatusHandled)
			h.intake.failing.Store(true)
			settle := tt.back(t, h, seq)
			waitFor(t, 30*time.Second, "a read of the status", func() bool { return h.intake.failed.Load() > 0 })
			if n := runs.Load(); n != 1 {
				t.Fatalf("with its status unread, the handled delivery ran again: %d runs", n)
			}
			h.intake.failing.Store(false)
			settle()
			if n := runs.Load(); n != 1 {
				t.Fatalf("once its status was read, the handled delivery ran again: %d runs", n)
			}
		})
	}
}

// orderKeyRecord reads the record of key; nil when there is none.
func orderKeyRecord(t *testing.T, h *harness, key string) jetstream.KeyValueEntry {
	t.Helper()
	e, err := h.keys.Get(context.Background(), KeyName(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// headAgain writes a record naming the delivery at seq as its key's Head,
// as a crash after its status was written and before its key went on
// leaves it.
func headAgain(t *testing.T, h *harness, seq uint64) func() {
	rec := KeyRecord{Key: "key:u", Head: seq, Tail: seq, Due: time.Now()}
	if _, err := h.keys.Create(context.Background(), KeyName(rec.Key), rec.Marshal()); err != nil {
		t.Fatal(err)
	}
	return func() {
		waitFor(t, 30*time.Second, "the key's record to go", func() bool { return orderKeyRecord(t, h, rec.Key) == nil })
	}
}

// redelivered returns the message at seq as a consumer hands it out a
// second time, with the consumer.
func redelivered(t *testing.T, h *harness, seq uint64) (jetstream.Consumer, jetstream.Msg) {
	ctx := context.Background()
	m, err := h.inbox.GetMsg(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := h.inbox.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "UNREAD", FilterSubject: m.Subject, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq: seq, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := fetchOne(t, cons)
	if err := first.Nak(); err != nil {
		t.Fatal(err)
	}
	msg := fetchOne(t, cons)
	if meta, err := msg.Metadata(); err != nil || meta.NumDelivered != 2 || meta.Sequence.Stream != seq {
		t.Fatalf("the message handed out again: %+v, %v", meta, err)
	}
	return cons, msg
}

func fetchOne(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		return msg
	}
	t.Fatalf("nothing handed out: %v", batch.Error())
	return nil
}

// admittedAgain hands the ordered delivery at seq to admit a second time,
// as its partition does when the acknowledgement of its first admission was
// lost: its key has no record any more.
func admittedAgain(t *testing.T, h *harness, seq uint64) func() {
	return handAgain(t, h, seq, h.r.ordered.admit, func() {
		if orderKeyRecord(t, h, "key:u") != nil {
			t.Fatal("admitted again with its status unread: its key has a record naming it")
		}
	})
}

// handedOutAgain hands the unordered delivery at seq to the workers'
// handle a second time, as the workers' consumer does when its
// acknowledgement was lost.
func handedOutAgain(t *testing.T, h *harness, seq uint64) func() {
	return handAgain(t, h, seq, h.r.handle, func() {})
}

// handAgain passes the delivery at seq, handed out again, to take; then,
// once its status can be read, the copy handed out after take gave it back,
// and checks that take acknowledged it.
func handAgain(t *testing.T, h *harness, seq uint64, take func(jetstream.Msg), check func()) func() {
	cons, msg := redelivered(t, h, seq)
	take(msg)
	check()
	return func() {
		again := fetchOne(t, cons) // given back, with a delay
		take(again)
		check()
		if _, err := cons.Next(jetstream.FetchMaxWait(3 * time.Second)); err == nil {
			t.Error("handed out again once its status was read: it was not acknowledged")
		}
	}
}
