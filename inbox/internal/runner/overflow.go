package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/overflow"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// The tenants' own consumers (package overflow): the runner lists them
// every overflowEvery and fetches from each it finds (fair.go), as from the
// workers' consumer. One with nothing pending for overflowIdle is deleted:
// a consumer costs the server even when idle. A delivery the intake stores
// on a tenant's subject just as its consumer is deleted (the intake made
// sure of the consumer up to a while before) would find none: every
// reconcileOverflowEvery the runner makes the consumer again for a subject
// whose last delivery has not ended. A consumer made again hands out its
// subject from the start; a delivery stored before its consumer was made
// (createdSlack for the clocks of a cluster) may have run under the one
// before, so its status is read before it runs (handleChecked), and one
// that ended is settled without running.
const (
	overflowEvery          = time.Second
	reconcileOverflowEvery = 5 * time.Second
	createdSlack           = time.Second
)

// overflowIdle is how long a tenant's consumer has nothing pending before
// it is deleted (Runner.idleAfter, which the tests shorten).
const overflowIdle = 10 * time.Minute

// placesPerWorker is how many deliveries a source may hold (fetched, queued
// or running, not ended) per worker: past the running ones, a few queued
// for each busy worker, so that it finds the next one as it finishes and
// writes its attempt with the handled status of the one before (work, in
// worker.go), and fetched in larger batches (bench/README.md, "Third
// round"). Deliveries held wait while the others run (their leases
// renewed), and for their lease after a crash: the more places, the more
// wait.
const placesPerWorker = 4

// source is a consumer the runner fetches from: the workers' consumer or a
// tenant's.
type source struct {
	cons    jetstream.Consumer
	name    string
	held    chan struct{} // one place per delivery fetched and not ended
	tenant  bool          // a tenant's consumer, which may be deleted
	created time.Time     // a tenant's: when its consumer was made
	ctx     context.Context
	cancel  context.CancelFunc
}

// newSource returns a source of cons with placesPerWorker places per
// worker.
func (r *Runner) newSource(cons jetstream.Consumer, tenant bool, created time.Time) *source {
	ctx, cancel := context.WithCancel(r.take.ctx)
	return &source{cons: cons, name: cons.CachedInfo().Name, held: make(chan struct{}, placesPerWorker*r.cfg.Workers),
		tenant: tenant, created: created, ctx: ctx, cancel: cancel}
}

// dropSource forgets a tenant's source whose loop ended, so that the next
// listing starts it again if its consumer is there.
func (r *Runner) dropSource(src *source) {
	src.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources[src.name] == src {
		delete(r.sources, src.name)
	}
}

// consumerGone reports an error of a pull request whose consumer was
// deleted.
func consumerGone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound)
}

// watchOverflow lists the tenants' consumers until StopTaking: it starts a
// source for each new one, deletes the idle ones, and makes again those a
// subject with a delivery not ended lacks.
func (r *Runner) watchOverflow() {
	defer r.loops.Done()
	first := true // the first listing: the leases of the process before are handed back (embedded)
	var reconciled time.Time
	ended := map[string]uint64{} // a subject without a consumer whose last delivery ended → its count then
	t := time.NewTicker(overflowEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(r.take.ctx, 10*time.Second)
		live, err := r.scanOverflow(ctx, first)
		if err == nil {
			first = false
			if time.Since(reconciled) >= reconcileOverflowEvery {
				if err = r.reconcileOverflow(ctx, live, ended); err == nil {
					reconciled = time.Now()
				}
			}
		}
		cancel()
		if err != nil && !r.isClosed() {
			r.cfg.Logger.Warn("inbox: listing the tenants' consumers", "error", err)
		}
		select {
		case <-t.C:
		case <-r.closing:
			return
		}
	}
}

// scanOverflow lists the tenants' consumers, starts a source for each new
// one (or one made again), stops those of consumers gone and deletes the
// idle; it returns the subjects of the consumers left.
func (r *Runner) scanOverflow(ctx context.Context, first bool) (map[string]bool, error) {
	var found []*jetstream.ConsumerInfo
	list := r.cfg.Inbox.ListConsumers(ctx)
	for ci := range list.Info() {
		if _, ok := overflow.DigestOf(r.cfg.Name, ci.Name); ok {
			found = append(found, ci)
			r.leasedFor(ci.Config.AckWait)
		} else if ci.Name == WorkersConsumer(r.cfg.Name) {
			r.leasedFor(ci.Config.AckWait) // another worker's --ack-wait
		}
	}
	if err := list.Err(); err != nil {
		return nil, err
	}
	live := map[string]bool{}
	names := map[string]bool{}
	for _, ci := range found {
		if idle(ci, r.idleAfter) {
			if err := r.cfg.Inbox.DeleteConsumer(ctx, ci.Name); err == nil {
				r.cfg.Logger.Debug("inbox: deleted an idle tenant's consumer", "consumer", ci.Name)
				continue
			}
		}
		live[ci.Config.FilterSubject] = true
		names[ci.Name] = true
		r.mu.Lock()
		src, closed := r.sources[ci.Name], r.closed
		r.mu.Unlock()
		if closed {
			return live, nil
		}
		if src != nil && src.created.Equal(ci.Created) {
			continue
		}
		if src != nil {
			src.cancel() // its consumer was made again: a new source
		}
		cons, err := r.cfg.Inbox.Consumer(ctx, ci.Name)
		if err != nil {
			continue
		}
		if r.cfg.Embedded && first {
			r.recoverLeases(ctx, cons)
		}
		src = r.newSource(cons, true, ci.Created)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return live, nil
		}
		r.sources[ci.Name] = src
		r.loops.Add(1)
		r.mu.Unlock()
		go r.dispatch(src)
	}
	r.mu.Lock()
	for name, src := range r.sources {
		if !names[name] {
			src.cancel()
			delete(r.sources, name)
		}
	}
	r.mu.Unlock()
	return live, nil
}

// idle reports a tenant's consumer with nothing to hand out or waiting for
// its end, and no activity for after.
func idle(ci *jetstream.ConsumerInfo, after time.Duration) bool {
	if ci.NumPending > 0 || ci.NumAckPending > 0 {
		return false
	}
	last := ci.Created
	for _, t := range []*time.Time{ci.Delivered.Last, ci.AckFloor.Last} {
		if t != nil && t.After(last) {
			last = *t
		}
	}
	return time.Since(last) > after
}

// reconcileOverflow makes again the consumer of each tenant's subject that
// has none (not in live) and whose last delivery has not ended. ended
// remembers the subjects found ended, with their count of messages then,
// not to be read again until it changes.
func (r *Runner) reconcileOverflow(ctx context.Context, live map[string]bool, ended map[string]uint64) error {
	info, err := r.cfg.Inbox.Info(ctx, jetstream.WithSubjectFilter(overflow.SubjectsFilter(r.cfg.Name)))
	if err != nil {
		return err
	}
	for subj := range ended {
		if _, ok := info.State.Subjects[subj]; !ok || live[subj] {
			delete(ended, subj)
		}
	}
	prefix := r.cfg.Name + ".in." + stored.OverflowToken + "."
	for subj, n := range info.State.Subjects {
		if live[subj] || ended[subj] == n {
			continue
		}
		m, err := r.cfg.Inbox.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			continue
		}
		key := stored.StatusKey(m.Header, stored.TokenOf(m.Header, subj), m.Sequence)
		st, err := r.cfg.Intake.ReadStatus(ctx, key)
		if err != nil {
			continue
		}
		if st != nil && (st.Seq > m.Sequence || st.Seq == m.Sequence && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead)) {
			ended[subj] = n
			continue
		}
		digest, _, _ := strings.Cut(strings.TrimPrefix(subj, prefix), ".")
		cfg := overflow.ConsumerConfig(r.cfg.Name, digest, r.cfg.AckWait, r.cfg.Inbox.CachedInfo().Config.Replicas)
		if err := overflow.Ensure(ctx, r.cfg.Inbox, cfg); err != nil {
			return err
		}
		r.cfg.Logger.Info("inbox: made again the consumer of a tenant's subject holding a delivery not ended", "consumer", cfg.Durable, "seq", m.Sequence)
	}
	return nil
}

// HoldsDeliveries reports whether consumer, of the inbox named name, hands
// out deliveries to run (the workers', a partition's or a tenant's): its
// acknowledgement floor bounds the deliveries not yet ended.
func HoldsDeliveries(name, consumer string) bool {
	_, tenant := overflow.DigestOf(name, consumer)
	return tenant || consumer == WorkersConsumer(name) || strings.HasPrefix(consumer, OrderConsumerPrefix(name))
}

// Backlog sums the deliveries that the workers' consumer and the tenants'
// consumers of the inbox named name in stream s have not ended (not handed
// out, or handed out and not acknowledged), with the lowest acknowledgement
// floor among those that have some. The error wraps
// jetstream.ErrConsumerNotFound when the workers' consumer is not there.
func Backlog(ctx context.Context, s jetstream.Stream, name string) (waiting int64, floor uint64, err error) {
	workers, some := false, false
	list := s.ListConsumers(ctx)
	for ci := range list.Info() {
		_, tenant := overflow.DigestOf(name, ci.Name)
		if !tenant && ci.Name != WorkersConsumer(name) {
			continue
		}
		workers = workers || !tenant
		n := int64(ci.NumPending) + int64(ci.NumAckPending)
		if n == 0 {
			continue
		}
		waiting += n
		if !some || ci.AckFloor.Stream < floor {
			floor, some = ci.AckFloor.Stream, true
		}
	}
	if err := list.Err(); err != nil {
		return 0, 0, err
	}
	if !workers {
		return 0, 0, fmt.Errorf("consumer %s: %w", WorkersConsumer(name), jetstream.ErrConsumerNotFound)
	}
	return waiting, floor, nil
}
