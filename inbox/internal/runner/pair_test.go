package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// queued counts the deliveries waiting in the fair queue.
func (q *fairQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, g := range q.groups {
		n += len(g.msgs)
	}
	return n
}

// putCall is one PutStatuses call as the fake intake saw it.
type putCall struct {
	keys     []string
	statuses []delivery.Status
	ackFloor uint64 // the workers' consumer's, when the call came
}

// pairHarness is a harness with one worker whose handlers each wait until
// another delivery is queued, or every other one is handled, so that the
// worker finds the next one queued when it finishes; it records every
// status write, and checks in each handler that the attempt running was
// stored before it.
type pairHarness struct {
	*harness
	ids []string

	mu      sync.Mutex
	calls   []putCall
	unsaved []string // deliveries whose handlers ran without their attempt stored
}

// newPairHarness stores n deliveries, then starts the runner, with ackWait
// unless 0; fail, when set, decides whether a status write fails (nothing written), with p.mu
// held.
func newPairHarness(t *testing.T, n int, ackWait time.Duration, fail func(sts []KeyedStatus) bool) *pairHarness {
	t.Helper()
	p := &pairHarness{}
	for i := range n {
		p.ids = append(p.ids, fmt.Sprintf("p%02d", i))
	}
	p.harness = newHarness(t, func(d webhooks.Delivery) error {
		st, ok := p.intake.status(d.ID)
		if !ok || st.Status != delivery.StatusRunning || st.Last() != d.Attempt {
			p.mu.Lock()
			p.unsaved = append(p.unsaved, fmt.Sprintf("%s attempt %d: status %+v", d.ID, d.Attempt, st))
			p.mu.Unlock()
		}
		// Bounded: a test that finds no pair fails on its counts.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if p.r.queue.queued() > 0 || p.othersHandled(d.ID) {
				break
			}
		}
		return nil
	}, func(c *Config) {
		c.Workers = 1
		if ackWait > 0 {
			c.AckWait = ackWait
		}
	}, false)
	p.intake.onPut = func(sts []KeyedStatus) error {
		c := putCall{}
		for _, s := range sts {
			c.keys = append(c.keys, s.Key)
			c.statuses = append(c.statuses, s.Status.Status)
		}
		// The consumer exists once the runner started: the first write
		// comes after.
		info, err := p.inbox.Consumer(context.Background(), WorkersConsumer(testName))
		if err != nil {
			return err
		}
		ci, err := info.Info(context.Background())
		if err != nil {
			return err
		}
		c.ackFloor = ci.AckFloor.Stream
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, c)
		if fail != nil && fail(sts) {
			return errors.New("the store did not answer")
		}
		return nil
	}
	for _, id := range p.ids {
		p.store(id, "")
	}
	if err := p.r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// othersHandled reports whether every delivery but id is handled.
func (p *pairHarness) othersHandled(id string) bool {
	for _, other := range p.ids {
		if st, _ := p.intake.status(other); other != id && st.Status != delivery.StatusHandled {
			return false
		}
	}
	return true
}

// TestHandledSharesRecordWithNext: a worker that finishes a delivery while
// another is queued writes the handled status of the one and the attempt of
// the next as one record (one PutStatuses call), the handled status before
// that delivery's ack and the attempt before the next one's handlers run.
func TestHandledSharesRecordWithNext(t *testing.T) {
	t.Parallel()
	const n = 12
	p := newPairHarness(t, n, 0, nil)
	for _, id := range p.ids {
		p.waitStatus(id, delivery.StatusHandled)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.unsaved) > 0 {
		t.Errorf("handlers ran before their attempt was stored: %v", p.unsaved)
	}
	// The first attempt alone, then one record per delivery handled while
	// the next waited, then the last handled status alone.
	if len(p.calls) != n+1 {
		t.Errorf("%d status writes for %d deliveries, want %d: %+v", len(p.calls), n, n+1, p.calls)
	}
	pairs := 0
	for _, c := range p.calls {
		if len(c.keys) != 2 {
			continue
		}
		pairs++
		if c.statuses[0] != delivery.StatusHandled || c.statuses[1] != delivery.StatusRunning || c.keys[0] == c.keys[1] {
			t.Errorf("a shared record: keys %v, statuses %v; want one handled, then another's attempt", c.keys, c.statuses)
		}
	}
	if pairs != n-1 {
		t.Errorf("%d shared records, want %d", pairs, n-1)
	}
	// The stream's sequences are 1..n in the ids' order, run in that order
	// by the one worker: a handled status's delivery is not acknowledged
	// yet when it is written.
	seq := uint64(0)
	for _, c := range p.calls {
		for i, st := range c.statuses {
			if st != delivery.StatusHandled {
				continue
			}
			seq++
			if c.keys[i] != stored.SubjectToken(p.ids[seq-1]) {
				t.Fatalf("handled status %d is %s's, want %s's", seq, c.keys[i], p.ids[seq-1])
			}
			if c.ackFloor >= seq {
				t.Errorf("%s acknowledged (ack floor %d) before its handled status was written", p.ids[seq-1], c.ackFloor)
			}
		}
	}
	for _, id := range p.ids {
		if ran := p.ran(id); len(ran) != 1 {
			t.Errorf("%s ran %d times, want once", id, len(ran))
		}
	}
	// Every ack follows: the consumer's floor reaches the last.
	waitFor(t, 30*time.Second, "every delivery acknowledged", func() bool {
		c, err := p.inbox.Consumer(context.Background(), WorkersConsumer(testName))
		if err != nil {
			return false
		}
		ci, err := c.Info(context.Background())
		return err == nil && ci.AckFloor.Stream == n && ci.NumAckPending == 0
	})
}

// TestFailedSharedRecordRunsNeither: when the record shared by a handled
// delivery and the next one's attempt cannot be written, the handled one is
// not acknowledged (it is handed back and runs again, its attempts
// numbered on) and the next one does not run then: it runs later, once its
// own attempt is stored.
func TestFailedSharedRecordRunsNeither(t *testing.T) {
	t.Parallel()
	const n = 4
	var failed []string
	var failedAt time.Time
	p := newPairHarness(t, n, 0, func(sts []KeyedStatus) bool {
		if failed != nil || len(sts) != 2 {
			return false
		}
		failed, failedAt = []string{sts[0].Key, sts[1].Key}, time.Now()
		return true
	})
	for _, id := range p.ids {
		p.waitStatus(id, delivery.StatusHandled)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.unsaved) > 0 {
		t.Errorf("handlers ran before their attempt was stored: %v", p.unsaved)
	}
	if failed == nil {
		t.Fatal("no shared record was written")
	}
	handled, next := p.ids[0], p.ids[1]
	if failed[0] != stored.SubjectToken(handled) || failed[1] != stored.SubjectToken(next) {
		t.Fatalf("the failed record held %v, want %s then %s", failed, handled, next)
	}
	// The handled one ran again, as attempt 2, after its status was lost.
	ran := p.ran(handled)
	if len(ran) != 2 || ran[0].Attempt != 1 || ran[1].Attempt != 2 {
		t.Errorf("%s ran %d times (%+v), want attempts 1 and 2", handled, len(ran), ran)
	}
	// The next one ran once, after statusRetryDelay: not on the failed write.
	ran = p.ran(next)
	if len(ran) != 1 || ran[0].Attempt != 1 {
		t.Fatalf("%s ran %d times (%+v), want once, attempt 1", next, len(ran), ran)
	}
	st, _ := p.intake.status(next)
	if started := st.Attempts[0].Start; started.Before(failedAt.Add(statusRetryDelay - time.Second)) {
		t.Errorf("%s started %v after its record failed, want after about %v", next, started.Sub(failedAt), statusRetryDelay)
	}
}

// TestSharedRecordKeepsLeases: while a shared record is slow to write
// (several leases long), the leases of both its deliveries are renewed:
// the server hands neither out again, and each runs once.
func TestSharedRecordKeepsLeases(t *testing.T) {
	t.Parallel()
	const n = 3
	const ackWait = 300 * time.Millisecond
	slowed := false
	p := newPairHarness(t, n, ackWait, func(sts []KeyedStatus) bool {
		if !slowed && len(sts) == 2 {
			slowed = true
			time.Sleep(4 * ackWait)
		}
		return false
	})
	for _, id := range p.ids {
		p.waitStatus(id, delivery.StatusHandled)
	}
	for _, id := range p.ids {
		if ran := p.ran(id); len(ran) != 1 {
			t.Errorf("%s ran %d times, want once", id, len(ran))
		}
	}
	c, err := p.inbox.Consumer(context.Background(), WorkersConsumer(testName))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Consumer != n {
		t.Errorf("the server handed out %d deliveries for %d stored: a lease ran out", ci.Delivered.Consumer, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slowed {
		t.Error("no shared record was written")
	}
}
