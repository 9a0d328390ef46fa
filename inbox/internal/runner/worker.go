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
	"forgehooks.dev/forgehooks/internal/vouched"
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

// fetchGather is how long a source waits for more free places before a
// pull request while the workers have deliveries queued (gather).
const fetchGather = 2 * time.Millisecond

// clusterPullBytes bounds what one pull request of the workers may bring in
// a cluster, counting each delivery as the server's largest message: half
// of nats-server's default max_pending, past which it cuts a client as a
// slow consumer.
const clusterPullBytes = 32 << 20

// orderPullBatch is the batch of the partitions' pull requests.
const orderPullBatch = 64

// dispatch fetches the deliveries of one source into the fair queue
// (fair.go) while it has room: it waits for a free place (one per delivery
// held, queued or running, placesPerWorker per worker and source), takes
// every place free, and asks the server for as many deliveries (a pull
// request, answered as they come, for up to fetchWait). Once Close was
// called, those that still come are handed back. It ends, for a tenant's source, when its consumer is
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
		if places < cap(src.held)/2 && r.queue.waiting() {
			places = r.gather(src, places)
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

// gather waits up to fetchGather for more of src's places to free, while
// the workers have deliveries queued (nothing waits on this fetch then),
// up to half of them: under load a place frees at a time, and a pull
// request for each costs the server and the client more than the deliveries
// it brings. It returns the places held.
func (r *Runner) gather(src *source, places int) int {
	t := time.NewTimer(fetchGather)
	defer t.Stop()
	for places < cap(src.held)/2 {
		select {
		case src.held <- struct{}{}:
			places++
		case <-t.C:
			return places
		case <-r.closing:
			return places
		case <-src.ctx.Done():
			return places
		}
	}
	return places
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
		if !r.start(m) {
			<-r.sem
			return
		}
		go func() {
			defer func() { <-r.sem }()
			r.work(m, true)
		}()
	}
}

// start begins m, just taken from the fair queue, for a worker; false
// once StopTaking was called, when it is handed back instead.
func (r *Runner) start(m queuedMsg) bool {
	select {
	case r.dequeued <- struct{}{}:
	default:
	}
	if !r.begin() {
		_ = m.msg.Nak()
		r.queue.done(m.tenant)
		<-m.src.held
		return false
	}
	return true
}

// next takes, for a worker that just ran a delivery, the one the fair
// queue gives it, as a free worker would take it; ok is false when none
// waits or StopTaking was called.
func (r *Runner) next() (m queuedMsg, ok bool) {
	if m, ok = r.queue.pop(); !ok || !r.start(m) {
		return queuedMsg{}, false
	}
	return m, true
}

// left ends m's count as running for its tenant (fairQueue.done), once its
// handlers returned or it ended without running them.
func (r *Runner) left(m queuedMsg) {
	if m.src != nil {
		r.queue.done(m.tenant)
	}
}

// ended gives back m's place once it is settled: acknowledged, handed
// back or moved to the dead letters.
func (r *Runner) ended(m queuedMsg) {
	if m.src != nil {
		<-m.src.held
		r.active.Done()
	}
}

// renewQueued renews the leases of the deliveries queued, as a worker does
// those of the ones it took (startRenewal), every renewEvery.
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

// handle runs one stored delivery that no fair queue holds (an ordered one
// without a key) and settles it: ack, a retry after the next delay, or the
// dead letters.
func (r *Runner) handle(msg jetstream.Msg) { r.work(queuedMsg{msg: msg}, false) }

// work runs the delivery m on a worker and settles it. With chain, while
// the delivery it ran was handled and the fair queue holds another (next:
// the one a free worker would take), it takes that one, and one record
// holds the handled status of the one and the attempt of the next, written
// and waited for once where each took a write and a wait of its own. Each
// still holds as if written alone: the handled status is stored before that
// delivery's ack, the attempt before the next one's handlers run, and a
// failed write hands both back (statusRetryDelay), running neither.
// The ordered keys write theirs one at a time (keys.go): a key's next
// delivery is another key's business.
func (r *Runner) work(m queuedMsg, chain bool) {
	ctx := r.handlers.ctx
	var handled *attemptRun // ran and handled; its status not yet written
	for {
		a := r.identify(m)
		if a != nil && handled != nil && a.key == handled.key {
			// A copy of the one just handled (stored again, or handed
			// out again): its status is written first, and read.
			r.settleHandled(handled, r.putStatus(ctx, handled.key, handled.st))
			handled = nil
		}
		if a == nil || !r.prepare(ctx, a) {
			if handled != nil {
				r.settleHandled(handled, r.putStatus(ctx, handled.key, handled.st))
			}
			r.left(m)
			r.ended(m)
			return
		}
		sts := []KeyedStatus{{Key: a.key, Status: a.st}}
		if handled != nil {
			sts = []KeyedStatus{{Key: handled.key, Status: handled.st}, sts[0]}
		}
		err := r.cfg.Intake.PutStatuses(ctx, sts...)
		if handled != nil {
			r.settleHandled(handled, err)
			handled = nil
		}
		if err != nil {
			a.renew.stop()
			_ = m.msg.NakWithDelay(statusRetryDelay)
			r.left(m)
			r.ended(m)
			return
		}
		a.st.Status = a.prev
		a.st.Attempts = a.st.Attempts[:len(a.st.Attempts)-1]
		if !r.runAttempt(ctx, a) {
			r.ended(m)
			return
		}
		if chain {
			if next, ok := r.next(); ok {
				handled, m = a, next
				continue
			}
		}
		r.settleHandled(a, r.putStatus(ctx, a.key, a.st))
		return
	}
}

// attemptRun is a delivery a worker took: what names it and, once
// prepared, its status with the attempt about to run.
type attemptRun struct {
	m         queuedMsg
	h         nats.Header
	token     string
	key       string // its status's
	seq       uint64
	delivered uint64 // the server's count of deliveries
	// Set by prepare: st holds the attempt (running) until its record is
	// written, then the attempts before it, then its outcome.
	st      *stored.Status
	prev    delivery.Status // st's status before the attempt
	before  int             // the attempts of the copies before this one
	attempt int
	start   time.Time
	renew   *renewal // its lease's, from its attempt's record to its settlement
	checked Checked  // what Check knew of its payload
}

// identify reads what names m's delivery; nil when it cannot run at all
// (ended).
func (r *Runner) identify(m queuedMsg) *attemptRun {
	meta, err := m.msg.Metadata()
	if err != nil {
		r.cfg.Logger.Error("inbox: a message without JetStream metadata", "subject", m.msg.Subject(), "error", err)
		_ = m.msg.Term()
		return nil
	}
	h := m.msg.Headers()
	if h == nil {
		h = nats.Header{}
	}
	token := stored.TokenOf(h, m.msg.Subject())
	seq := meta.Sequence.Stream
	return &attemptRun{m: m, h: h, token: token, key: stored.StatusKey(h, token, seq), seq: seq, delivered: meta.NumDelivered}
}

// prepare decides whether a runs and records its attempt in a.st (not yet
// written), starting its lease's renewal; false when it does not run (it
// was settled, handed back or buried).
func (r *Runner) prepare(ctx context.Context, a *attemptRun) bool {
	msg := a.m.msg
	if a.delivered > 1 && r.Runs(a.key) {
		// Its lease ran out while its handlers still run here (a renewal
		// came late: a loaded machine). The server keys leases and acks by
		// stream sequence, so the run under way renews and settles this copy
		// too; running it again would run the handlers twice at once.
		_ = msg.InProgress()
		return false
	}
	// A delivery's first run has no status to read, unless it was stored
	// again by Retry or Replay (stored.HeaderKey), has no id (its key is its seq,
	// which a crash after the status was written could leave behind), or
	// was stored before this start, or before its source's consumer was
	// made (check: it may have run under an earlier consumer of its
	// subject).
	// A status that cannot be read is not taken for none: the delivery
	// may have run and been settled, and running it again would write over
	// its attempts. It waits as it would for a status it could not write.
	var st *stored.Status
	if a.m.check || a.delivered > 1 || a.h.Get(stored.HeaderKey) != "" || a.token == "n" || a.seq <= r.startSeq {
		var err error
		if st, err = r.cfg.Intake.ReadStatus(ctx, a.key); err != nil {
			r.statusUnread(a.key, err)
			_ = msg.NakWithDelay(statusRetryDelay)
			return false
		}
	}
	// Settled already: handled or a dead letter (set aside by Skip while it
	// waited for its retry, or buried just before a crash).
	if st != nil && st.Seq == a.seq && r.settled(msg, st) {
		return false
	}
	if st == nil {
		st = &stored.Status{}
	}
	st.Seq = a.seq
	// Attempts count the runs of the handlers, as the status records them
	// (each is recorded before it runs) and, for a copy stored again, those
	// of the copies before it. The server's count of deliveries is no
	// attempt number: it also counts deliveries that never reached a handler
	// (lost on the way to a pull request that had ended, held by a receiver
	// that died before it ran them) and may go back in a crash; it only says
	// when the status is worth reading.
	a.before = stored.Int(a.h.Get(stored.HeaderBefore))
	a.attempt = max(a.before, st.Last()) + 1
	chk, err := r.cfg.Intake.Check(a.h, msg.Data())
	if err != nil {
		r.cfg.Logger.Error("inbox: a delivery that cannot run; moved to the dead letters", "seq", a.seq, "subject", msg.Subject(), "reason", err)
		st.Add(delivery.Attempt{Number: a.attempt, Start: time.Now(), Err: err.Error()})
		r.bury(ctx, msg, a.h, a.token, a.key, st, err.Error())
		return false
	}
	// The attempt is recorded, and waited for, before it runs: after a
	// crash during it, the next one is numbered after it.
	a.start = time.Now()
	st.Add(delivery.Attempt{Number: a.attempt, Start: a.start})
	a.prev, st.Status = st.Status, delivery.StatusRunning
	a.st, a.checked = st, chk
	a.renew = startRenewal(func() { _ = msg.InProgress() }, r.renewEvery())
	return true
}

// runAttempt runs a's handlers, its attempt recorded, and reports whether
// they succeeded: a.st is then handled, and the caller writes it and
// settles a (settleHandled). Otherwise a is settled here (a retry later,
// the dead letters, or handed back when the Webhooks was closed).
func (r *Runner) runAttempt(ctx context.Context, a *attemptRun) (handled bool) {
	msg, h, st := a.m.msg, a.h, a.st
	r.setRunning(a.key, true)
	r.changedRunning(h, msg.Data(), a.seq, st)
	err := r.run(ctx, msg.Data(), h, a.attempt, a.checked)
	dur := time.Since(a.start)
	r.left(a.m)
	at := delivery.Attempt{Number: a.attempt, Start: a.start, Duration: dur}
	if err == nil {
		st.Add(at)
		st.Status = delivery.StatusHandled
		return true
	}
	a.renew.stop()
	r.setRunning(a.key, false)
	if errors.Is(err, emitter.ErrClosed) {
		// The Webhooks was closed under us: not the delivery's fault.
		_ = msg.Nak()
		return false
	}
	at.Err = describe(err)
	at.Final = final(err)
	st.Add(at)
	id := h.Get(stored.HeaderDelivery)
	switch {
	case r.retries(err, a.attempt-a.before):
		// The schedule of this copy: retryDue reads it the same way.
		st.Status = delivery.StatusRetrying
		_ = r.putStatus(ctx, a.key, st)
		delay := r.cfg.RetryDelays[a.attempt-a.before-1]
		r.cfg.Logger.Warn("inbox: handlers failed; retrying later", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempt", a.attempt, "retry_in", delay, "error", err)
		if delay > 0 {
			_ = msg.NakWithDelay(delay)
		} else {
			_ = msg.Nak()
		}
		r.cfg.Intake.Changed(h, msg.Data(), a.seq, st)
	case at.Final:
		r.cfg.Logger.Error("inbox: handlers failed with a final error; moved to the dead letters without a retry", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempts", a.attempt, "error", err)
		r.bury(ctx, msg, h, a.token, a.key, st, at.Err)
	default:
		r.cfg.Logger.Error("inbox: handlers failed on every attempt; moved to the dead letters", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempts", a.attempt, "error", err)
		r.bury(ctx, msg, h, a.token, a.key, st, at.Err)
	}
	return false
}

// settleHandled ends a handled delivery once its status was written (err
// nil): the ack, after the status, since a status lost after the ack would
// show it queued for good. Without its status (err) it runs again after
// statusRetryDelay. It counts as running (Runs) until then: a copy handed
// out again meanwhile is settled by this ack.
func (r *Runner) settleHandled(a *attemptRun, err error) {
	a.renew.stop()
	msg := a.m.msg
	if err != nil {
		_ = msg.NakWithDelay(statusRetryDelay)
	} else if aerr := msg.Ack(); aerr != nil {
		r.cfg.Logger.Warn("inbox: acknowledging a handled delivery failed; it may run again", "delivery", a.h.Get(stored.HeaderDelivery), "error", aerr)
	}
	r.setRunning(a.key, false)
	if err == nil {
		r.cfg.Intake.Changed(a.h, msg.Data(), a.seq, a.st)
	}
	r.ended(a.m)
}

// putStatus writes one status and waits for the store's answer.
func (r *Runner) putStatus(ctx context.Context, key string, st *stored.Status) error {
	return r.cfg.Intake.PutStatuses(ctx, KeyedStatus{Key: key, Status: st})
}

// final reports whether a failed attempt's error is final
// (webhooks.Permanent): the delivery goes to the dead letters after it,
// whatever retries its schedule has left.
func final(err error) bool { return webhooks.IsPermanent(err) }

// run calls Handle with the delivery, and with chk's word on its payload
// in ctx (vouched) for the emitter. A panic that escapes Handle is the
// attempt's error. The caller renews the lease meanwhile (startRenewal).
func (r *Runner) run(ctx context.Context, data []byte, h nats.Header, attempt int, chk Checked) (err error) {
	d := stored.Delivery(h, data, attempt)
	if chk.Validated {
		ctx = vouched.With(ctx, data, chk.Action)
	}
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
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("inbox: the receiver panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return r.cfg.Handle(ctx, d)
}

// renewal renews a delivery's lease every so often until stopped, from a
// timer: it costs no goroutine unless what it covers outlasts every.
type renewal struct {
	renew func()
	every time.Duration
	mu    sync.Mutex
	t     *time.Timer
	done  bool
}

// startRenewal calls renew every every until stop.
func startRenewal(renew func(), every time.Duration) *renewal {
	r := &renewal{renew: renew, every: every}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = time.AfterFunc(every, r.fire)
	return r
}

func (r *renewal) fire() {
	r.renew()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.t.Reset(r.every)
	}
}

// stop ends the renewals; safe to call more than once.
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
