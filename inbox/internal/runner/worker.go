package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// fetchWait bounds a pull request of the workers, as the client waits for
// it: the deliveries stored meanwhile are handed to it as they come. The
// client asks the server to end the request a second earlier (nats.go keeps
// a tenth of the wait, up to a second, for itself), so that a delivery the
// server sends just before then, after its replicas agreed on it, still
// finds the request listened to.
const fetchWait = 10 * time.Second

// fetchHeartbeat is how often the server tells a waiting pull request of
// the workers that it still holds it: two missed, the client ends the
// request and asks again, rather than wait out fetchWait for a request that
// went with a node.
const fetchHeartbeat = 2 * time.Second

// clusterPullBytes bounds what one pull request of the workers may bring in
// a cluster, counting each delivery as the server's largest message: half
// of nats-server's default max_pending, past which it cuts a client as a
// slow consumer.
const clusterPullBytes = 32 << 20

// orderPullBatch is the batch of the partitions' pull requests.
const orderPullBatch = 64

// dispatch fetches the deliveries of one source into the fair queue
// (fair.go) while it has room: it waits for a free place (one per delivery
// held, queued or running, Workers per source), takes every place free, and
// asks the server for as many deliveries (a pull request, answered as they
// come, for up to fetchWait). Once Close was called, those that still come
// are handed back. It ends, for a tenant's source, when its consumer is
// gone (deleted as idle).
//
// A pull request per round, not the client's continuous iterator: the
// iterator's buffer is as large as what it asks for and stays full while
// every worker is busy, so the server's status messages found no room and
// were dropped; losing the end of a request, it waited for deliveries that
// never came, and under a flood the workers stood still, for good.
func (r *Runner) dispatch(src *source) {
	defer r.loops.Done()
	defer r.dropSource(src)
	for {
		select {
		case src.held <- struct{}{}:
		case <-r.closing:
			return
		case <-src.ctx.Done():
			return
		}
		places := 1
	free:
		for places < cap(src.held) {
			select {
			case src.held <- struct{}{}:
				places++
			default:
				break free
			}
		}
		if r.queue.full() {
			// Bodies enough queued: wait for one to start (the signal goes
			// to one source of several: the others look again soon).
			for range places {
				<-src.held
			}
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-r.dequeued:
			case <-t.C:
			case <-r.closing:
				t.Stop()
				return
			}
			t.Stop()
			continue
		}
		queued, gone := r.fetch(src, places)
		for range places - queued {
			<-src.held
		}
		if gone || src.ctx.Err() != nil {
			return
		}
	}
}

// fetch asks src for up to n deliveries and queues each, holding a place,
// as it comes; it returns how many it queued, and gone when the source's
// consumer no longer exists (a tenant's, deleted as idle).
//
// In a cluster the request bounds the count only, never the bytes: a
// replicated consumer sends a delivery once its replicas agreed on it, but
// the status that ends a request at its byte bound ("409 Batch Completed")
// at once, so it overtook the request's last deliveries; the client stopped
// listening on it, and those deliveries, counted as delivered, waited for
// their lease to expire (AckWait), again and again under load. The count is
// bounded instead so that the largest deliveries fit clusterPullBytes. The
// embedded server's consumers are not replicated: there the bytes bound
// keeps its order and costs no place.
func (r *Runner) fetch(src *source, n int) (queued int, gone bool) {
	ctx, cancel := context.WithTimeout(src.ctx, fetchWait)
	defer cancel()
	opts := []jetstream.FetchOpt{jetstream.FetchContext(ctx), jetstream.FetchHeartbeat(fetchHeartbeat)}
	if r.cfg.Embedded {
		opts = append(opts, jetstream.FetchMaxBytes(int(2*r.cfg.Conn.MaxPayload())))
	} else if most := clusterPullBytes / max(r.cfg.Conn.MaxPayload(), 1); int64(n) > most {
		n = int(max(most, 1))
	}
	batch, err := src.cons.Fetch(n, opts...)
	if err != nil {
		if src.tenant && consumerGone(err) {
			return 0, true
		}
		if !r.isClosed() {
			r.cfg.Logger.Warn("inbox: taking deliveries", "error", err)
			time.Sleep(100 * time.Millisecond)
		}
		return 0, false
	}
	for msg := range batch.Messages() {
		m := queuedMsg{msg: msg, src: src}
		if h := msg.Headers(); h != nil {
			m.tenant = h.Get(stored.HeaderTenant)
		}
		if meta, err := msg.Metadata(); err == nil && !src.created.IsZero() {
			m.check = meta.Timestamp.Before(src.created.Add(createdSlack))
		}
		if !r.queue.push(m) {
			_ = msg.Nak() // Close was called
			continue
		}
		queued++
	}
	if err := batch.Error(); err != nil && !r.isClosed() && !fetchEnded(err) {
		if src.tenant && consumerGone(err) {
			return queued, true
		}
		r.cfg.Logger.Warn("inbox: taking deliveries", "error", err)
		time.Sleep(100 * time.Millisecond)
	}
	return queued, false
}

// schedule starts the queued deliveries, each on its own goroutine, while a
// worker is free, the next one as the fair queue chooses. At Close it hands
// back those still queued.
func (r *Runner) schedule() {
	defer r.loops.Done()
	defer func() {
		for _, m := range r.queue.close() {
			_ = m.msg.Nak()
			<-m.src.held
		}
	}()
	for {
		select {
		case r.sem <- struct{}{}:
		case <-r.closing:
			return
		}
		m, ok := r.queue.pop()
		for !ok {
			select {
			case <-r.queue.kick:
			case <-r.closing:
				<-r.sem
				return
			}
			m, ok = r.queue.pop()
		}
		select {
		case r.dequeued <- struct{}{}:
		default:
		}
		if !r.begin() {
			_ = m.msg.Nak()
			r.queue.done(m.tenant)
			<-m.src.held
			<-r.sem
			return
		}
		go func() {
			defer func() {
				r.queue.done(m.tenant)
				<-m.src.held
				<-r.sem
				r.active.Done()
			}()
			r.handleChecked(m.msg, m.check)
		}()
	}
}

// renewQueued renews the leases of the deliveries queued, as run does
// those of the running ones (renewEvery).
func (r *Runner) renewQueued() {
	defer r.loops.Done()
	every := r.renewEvery()
	// Looked at twice as often, so that none waits much past its time.
	t := time.NewTicker(max(every/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-r.leaseShorter:
		case <-r.closing:
			return
		}
		if e := r.renewEvery(); e != every {
			every = e
			t.Reset(max(every/2, time.Millisecond))
		}
		for _, msg := range r.queue.stale(time.Now().Add(-every)) {
			_ = msg.InProgress()
		}
	}
}

// fetchEnded reports an error of a pull request that is the usual way it
// ends: its time ran out, its batch or bytes were delivered, or Close.
func fetchEnded(err error) bool {
	for _, end := range []error{nats.ErrTimeout, context.DeadlineExceeded, context.Canceled,
		jetstream.ErrNoMessages, jetstream.ErrBatchCompleted, jetstream.ErrMaxBytesExceeded} {
		if errors.Is(err, end) {
			return true
		}
	}
	return false
}

// dispatchOrdered admits the deliveries of one partition to their keys
// (keys.go), one after the other, on its own goroutine: the server hands out
// the next only once this one is admitted. They run among the places of
// OrderPartitions, not of Workers.
func (r *Runner) dispatchOrdered(it jetstream.MessagesContext) {
	defer r.loops.Done()
	for {
		msg, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || r.isClosed() {
				r.handBack(it)
				return
			}
			r.cfg.Logger.Warn("inbox: taking ordered deliveries", "error", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !r.begin() {
			_ = msg.Nak()
			continue
		}
		r.ordered.admit(msg)
		r.active.Done()
	}
}

// handBack gives the deliveries fetched but not started back to the server.
func (r *Runner) handBack(it jetstream.MessagesContext) {
	for {
		msg, err := it.Next()
		if err != nil {
			return
		}
		_ = msg.Nak()
	}
}

// handle runs one stored delivery's handlers and settles it: ack, a retry
// after the next delay, or the dead letters.
func (r *Runner) handle(msg jetstream.Msg) { r.handleChecked(msg, false) }

// handleChecked is handle; check makes it read the delivery's status even
// on its first delivery by its consumer (one stored before the consumer was
// made, which may have run under an earlier consumer of its subject).
func (r *Runner) handleChecked(msg jetstream.Msg, check bool) {
	ctx := r.handlers.ctx
	meta, err := msg.Metadata()
	if err != nil {
		r.cfg.Logger.Error("inbox: a message without JetStream metadata", "subject", msg.Subject(), "error", err)
		_ = msg.Term()
		return
	}
	seq := meta.Sequence.Stream
	h := msg.Headers()
	if h == nil {
		h = nats.Header{}
	}
	token := stored.TokenOf(h, msg.Subject())
	key := stored.StatusKey(h, token, seq)
	if meta.NumDelivered > 1 && r.Runs(key) {
		// Its lease ran out while its handlers still run here (a renewal
		// came late: a loaded machine). The server keys leases and acks by
		// stream sequence, so the run under way renews and settles this copy
		// too; running it again would run the handlers twice at once.
		_ = msg.InProgress()
		return
	}
	// A delivery's first run has no status to read, unless it was stored
	// again by Retry or Replay (stored.HeaderKey), has no id (its key is its seq,
	// which a crash after the status was written could leave behind), or
	// was stored before this start.
	// A status that cannot be read is not taken for none: the delivery
	// may have run and been settled, and running it again would write over
	// its attempts. It waits as it would for a status it could not write.
	var st *stored.Status
	if check || meta.NumDelivered > 1 || h.Get(stored.HeaderKey) != "" || token == "n" || seq <= r.startSeq {
		if st, err = r.cfg.Intake.ReadStatus(ctx, key); err != nil {
			r.statusUnread(key, err)
			_ = msg.NakWithDelay(statusRetryDelay)
			return
		}
	}
	// Settled already: handled or a dead letter (set aside by Skip while it
	// waited for its retry, or buried just before a crash).
	if st != nil && st.Seq == seq && r.settled(msg, st) {
		return
	}
	if st == nil {
		st = &stored.Status{}
	}
	st.Seq = seq
	// Attempts count the runs of the handlers, as the status records them
	// (each is recorded before it runs) and, for a copy stored again, those
	// of the copies before it. The server's count of deliveries is no
	// attempt number: it also counts deliveries that never reached a handler
	// (lost on the way to a pull request that had ended, held by a receiver
	// that died before it ran them) and may go back in a crash; it only says
	// when the status is worth reading.
	before := stored.Int(h.Get(stored.HeaderBefore))
	attempt := max(before, st.Last()) + 1
	if err := r.cfg.Intake.Check(h, msg.Data()); err != nil {
		r.cfg.Logger.Error("inbox: a delivery that cannot run; moved to the dead letters", "seq", seq, "subject", msg.Subject(), "reason", err)
		st.Add(delivery.Attempt{Number: attempt, Start: time.Now(), Err: err.Error()})
		r.bury(ctx, msg, h, token, key, st, err.Error())
		return
	}
	start := time.Now()
	// The attempt is recorded, and waited for, before it runs: after a
	// crash during it, the next one is numbered after it.
	st.Add(delivery.Attempt{Number: attempt, Start: start})
	prev := st.Status
	st.Status = delivery.StatusRunning
	if perr := r.cfg.Intake.PutStatus(ctx, key, st); perr != nil {
		_ = msg.NakWithDelay(statusRetryDelay)
		return
	}
	st.Status = prev
	st.Attempts = st.Attempts[:len(st.Attempts)-1]
	r.setRunning(key, true)
	r.changedRunning(h, msg.Data(), seq, st)
	err = r.run(ctx, msg.Data(), h, attempt, func() { _ = msg.InProgress() })
	dur := time.Since(start)
	r.setRunning(key, false)
	if errors.Is(err, emitter.ErrClosed) {
		// The Webhooks was closed under us: not the delivery's fault.
		_ = msg.Nak()
		return
	}
	a := delivery.Attempt{Number: attempt, Start: start, Duration: dur}
	if err != nil {
		a.Err = describe(err)
		a.Final = final(err)
	}
	st.Add(a)
	id := h.Get(stored.HeaderDelivery)
	switch {
	case err == nil:
		st.Status = delivery.StatusHandled
		// Written before the ack, and waited for (the writes of concurrent
		// deliveries share a record): a status lost after the ack would
		// show it queued for good. Without its status it runs again.
		if perr := r.cfg.Intake.PutStatus(ctx, key, st); perr != nil {
			_ = msg.NakWithDelay(statusRetryDelay)
			return
		}
		if aerr := msg.Ack(); aerr != nil {
			r.cfg.Logger.Warn("inbox: acknowledging a handled delivery failed; it may run again", "delivery", id, "error", aerr)
		}
	case r.retries(err, attempt-before):
		// The schedule of this copy: retryDue reads it the same way.
		st.Status = delivery.StatusRetrying
		_ = r.cfg.Intake.PutStatus(ctx, key, st)
		delay := r.cfg.RetryDelays[attempt-before-1]
		r.cfg.Logger.Warn("inbox: handlers failed; retrying later", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempt", attempt, "retry_in", delay, "error", err)
		if delay > 0 {
			_ = msg.NakWithDelay(delay)
		} else {
			_ = msg.Nak()
		}
	case a.Final:
		r.cfg.Logger.Error("inbox: handlers failed with a final error; moved to the dead letters without a retry", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempts", attempt, "error", err)
		r.bury(ctx, msg, h, token, key, st, a.Err)
		return
	default:
		r.cfg.Logger.Error("inbox: handlers failed on every attempt; moved to the dead letters", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempts", attempt, "error", err)
		r.bury(ctx, msg, h, token, key, st, a.Err)
		return
	}
	r.cfg.Intake.Changed(h, msg.Data(), seq, st)
}

// final reports whether a failed attempt's error is final
// (webhooks.Permanent): the delivery goes to the dead letters after it,
// whatever retries its schedule has left.
func final(err error) bool { return webhooks.IsPermanent(err) }

// run calls Handle with the delivery, renewing its lease while the handlers
// run. A panic that escapes Handle is the attempt's error.
func (r *Runner) run(ctx context.Context, data []byte, h nats.Header, attempt int, renewLease func()) (err error) {
	d := stored.Delivery(h, data, attempt)
	if r.cfg.HandlerTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.HandlerTimeout)
		defer cancel()
		defer func() {
			// A handler that gave up on its context says why in its
			// own words; the attempt's record says which bound it was.
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, emitter.ErrClosed) {
				err = fmt.Errorf("inbox: the handlers ran past HandlerTimeout (%v): %w", r.cfg.HandlerTimeout, err)
			}
		}()
	}
	// The lease is renewed from a timer, which costs no goroutine unless the
	// handlers outlast renewEvery.
	renew := &renewal{renew: renewLease, every: r.renewEvery()}
	renew.start()
	defer renew.stop()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("inbox: the receiver panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return r.cfg.Handle(ctx, d)
}

// renewal renews a running delivery's lease every so often until stopped.
type renewal struct {
	renew func()
	every time.Duration
	mu    sync.Mutex
	t     *time.Timer
	done  bool
}

func (r *renewal) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = time.AfterFunc(r.every, r.fire)
}

func (r *renewal) fire() {
	r.renew()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.t.Reset(r.every)
	}
}

func (r *renewal) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.t.Stop()
}

// bury moves msg to the dead letters with its last error, then ends it in
// the inbox. When the dead letter cannot be written, msg is handed back to be
// tried again later rather than lost.
func (r *Runner) bury(ctx context.Context, msg jetstream.Msg, h nats.Header, token, key string, st *stored.Status, lastErr string) {
	if err := r.cfg.Intake.Bury(ctx, msg.Data(), h, token, key, st, lastErr); err != nil {
		r.cfg.Logger.Error("inbox: writing a dead letter failed; the delivery stays in the inbox", "key", key, "error", err)
		_ = msg.NakWithDelay(time.Minute)
		return
	}
	_ = msg.Term()
}

// loadStatus reads a status; nil when there is none (or it cannot be read:
// the status is a record of what happened, the delivery itself is in the
// stream).
func (r *Runner) loadStatus(ctx context.Context, key string) *stored.Status {
	st, err := r.cfg.Intake.ReadStatus(ctx, key)
	if err != nil {
		r.cfg.Logger.Warn("inbox: reading a delivery's status", "key", key, "error", err)
	}
	return st
}

// statusUnread logs a status that could not be read by a caller that
// waits for it, unless the inbox is closing.
func (r *Runner) statusUnread(key string, err error) {
	if !r.isClosed() {
		r.cfg.Logger.Warn("inbox: reading a delivery's status; it runs when the status can be read", "key", key, "error", err)
	}
}

// retries reports whether an attempt that failed with err, the tries-th of
// its stored copy, runs again (after RetryDelays[tries-1]); else the
// delivery goes to the dead letters: its schedule is spent or err is final.
// It is the one place both the workers and the ordered keys decide so.
func (r *Runner) retries(err error, tries int) bool {
	return !final(err) && tries <= len(r.cfg.RetryDelays)
}

// changedRunning tells the watchers that the handlers of the delivery at
// seq, whose status (without the attempt now running) is st, run now.
func (r *Runner) changedRunning(h nats.Header, data []byte, seq uint64, st *stored.Status) {
	running := *st
	running.Status = delivery.StatusRunning
	r.cfg.Intake.Changed(h, data, seq, &running)
}

// statusRetryDelay is how long a delivery whose status could not be
// written waits before it runs again.
const statusRetryDelay = 5 * time.Second

// settled ends, without running it, a delivery handed out again whose
// status says it was handled or is a dead letter (its acknowledgement lost
// in a crash or an election), and reports whether it did.
func (r *Runner) settled(msg jetstream.Msg, st *stored.Status) bool {
	switch st.Status {
	case delivery.StatusHandled:
		_ = msg.Ack()
	case delivery.StatusDead:
		_ = msg.Term()
	default:
		return false
	}
	return true
}

// describe is an attempt's error: its message, and the stack of each panic.
func describe(err error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	var errs []error
	var ee *emitter.Error
	if errors.As(err, &ee) {
		errs = ee.Errors
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var p *emitter.PanicError
		if errors.As(e, &p) && len(p.Stack) > 0 {
			b.WriteString("\n\n")
			b.WriteString(p.Error())
			b.WriteString("\n")
			b.Write(p.Stack)
		}
	}
	return b.String()
}
