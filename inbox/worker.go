package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/jsonscan"
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

// dispatch fetches deliveries into the fair queue (fair.go) while it has
// room: it waits for a free place (one per delivery held, queued or
// running), takes every place free, and asks the server for as many
// deliveries (a pull request, answered as they come, for up to fetchWait).
// Once Close was called, those that still come are handed back.
//
// A pull request per round, not the client's continuous iterator: the
// iterator's buffer is as large as what it asks for and stays full while
// every worker is busy, so the server's status messages found no room and
// were dropped; losing the end of a request, it waited for deliveries that
// never came, and under a flood the workers stood still, for good.
func (in *runner) dispatch(cons jetstream.Consumer) {
	defer in.loops.Done()
	for {
		select {
		case in.held <- struct{}{}:
		case <-in.closing:
			return
		}
		places := 1
	free:
		for places < cap(in.held) {
			select {
			case in.held <- struct{}{}:
				places++
			default:
				break free
			}
		}
		if in.queue.full() {
			// Bodies enough queued: wait for one to start.
			for range places {
				<-in.held
			}
			select {
			case <-in.dequeued:
			case <-in.closing:
				return
			}
			continue
		}
		places -= in.fetch(cons, places)
		for range places {
			<-in.held
		}
	}
}

// fetch asks for up to n deliveries and queues each, holding a place, as it
// comes; it returns how many it queued.
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
func (in *runner) fetch(cons jetstream.Consumer, n int) (queued int) {
	ctx, cancel := context.WithTimeout(in.takeCtx, fetchWait)
	defer cancel()
	opts := []jetstream.FetchOpt{jetstream.FetchContext(ctx), jetstream.FetchHeartbeat(fetchHeartbeat)}
	if in.ns != nil {
		opts = append(opts, jetstream.FetchMaxBytes(pullMaxBytes))
	} else if most := clusterPullBytes / max(in.nc.MaxPayload(), 1); int64(n) > most {
		n = int(max(most, 1))
	}
	batch, err := cons.Fetch(n, opts...)
	if err != nil {
		if !in.isClosed() {
			in.log.Warn("inbox: taking deliveries", "error", err)
			time.Sleep(100 * time.Millisecond)
		}
		return 0
	}
	for msg := range batch.Messages() {
		tenant := ""
		if h := msg.Headers(); h != nil {
			tenant = h.Get(hdrTenant)
		}
		if !in.queue.push(msg, tenant) {
			_ = msg.Nak() // Close was called
			continue
		}
		queued++
	}
	if err := batch.Error(); err != nil && !in.isClosed() && !fetchEnded(err) {
		in.log.Warn("inbox: taking deliveries", "error", err)
		time.Sleep(100 * time.Millisecond)
	}
	return queued
}

// schedule starts the queued deliveries, each on its own goroutine, while a
// worker is free, the next one as the fair queue chooses. At Close it hands
// back those still queued.
func (in *runner) schedule() {
	defer in.loops.Done()
	defer func() {
		for _, msg := range in.queue.close() {
			_ = msg.Nak()
			<-in.held
		}
	}()
	for {
		select {
		case in.sem <- struct{}{}:
		case <-in.closing:
			return
		}
		m, ok := in.queue.pop()
		for !ok {
			select {
			case <-in.queue.kick:
			case <-in.closing:
				<-in.sem
				return
			}
			m, ok = in.queue.pop()
		}
		select {
		case in.dequeued <- struct{}{}:
		default:
		}
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			_ = m.msg.Nak()
			in.queue.done(m.tenant)
			<-in.held
			<-in.sem
			return
		}
		in.active.Add(1)
		in.mu.Unlock()
		go func() {
			defer func() {
				in.queue.done(m.tenant)
				<-in.held
				<-in.sem
				in.active.Done()
			}()
			in.handle(m.msg)
		}()
	}
}

// renewQueued renews the leases of the deliveries queued, as run does
// those of the running ones, every third of AckWait.
func (in *runner) renewQueued() {
	defer in.loops.Done()
	every := max(in.opts.AckWait/3, time.Millisecond)
	// Looked at twice as often, so that none waits much past a third.
	t := time.NewTicker(max(every/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-in.closing:
			return
		}
		for _, msg := range in.queue.stale(time.Now().Add(-every)) {
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
func (in *runner) dispatchOrdered(it jetstream.MessagesContext) {
	defer in.loops.Done()
	for {
		msg, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || in.isClosed() {
				in.handBack(it)
				return
			}
			in.log.Warn("inbox: taking ordered deliveries", "error", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			_ = msg.Nak()
			continue
		}
		in.active.Add(1)
		in.mu.Unlock()
		in.ordered.admit(msg)
		in.active.Done()
	}
}

// handBack gives the deliveries fetched but not started back to the server.
func (in *runner) handBack(it jetstream.MessagesContext) {
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
func (in *runner) handle(msg jetstream.Msg) {
	ctx := in.handlerCtx
	meta, err := msg.Metadata()
	if err != nil {
		in.log.Error("inbox: a message without JetStream metadata", "subject", msg.Subject(), "error", err)
		_ = msg.Term()
		return
	}
	seq := meta.Sequence.Stream
	h := msg.Headers()
	if h == nil {
		h = nats.Header{}
	}
	token := tokenOf(h, msg.Subject())
	key := statusKey(h, token, seq)
	if meta.NumDelivered > 1 && in.runs(key) {
		// Its lease ran out while its handlers still run here (a renewal
		// came late: a loaded machine). The server keys leases and acks by
		// stream sequence, so the run under way renews and settles this copy
		// too; running it again would run the handlers twice at once.
		_ = msg.InProgress()
		return
	}
	// A delivery's first run has no status to read, unless it was stored
	// again by Retry or Replay (hdrKey), has no id (its key is its seq,
	// which a crash after the status was written could leave behind), or
	// was stored before this start.
	// A status that cannot be read is not taken for none: the delivery
	// may have run and been settled, and running it again would write over
	// its attempts. It waits as it would for a status it could not write.
	var st *status
	if meta.NumDelivered > 1 || h.Get(hdrKey) != "" || token == "n" || seq <= in.startSeq {
		if st, err = in.readStatus(ctx, key); err != nil {
			in.statusUnread(key, err)
			_ = msg.NakWithDelay(statusRetryDelay)
			return
		}
	}
	// Settled already: handled or a dead letter (set aside by Skip while it
	// waited for its retry, or buried just before a crash).
	if st != nil && st.Seq == seq && in.settled(msg, st) {
		return
	}
	if st == nil {
		st = &status{}
	}
	st.Seq = seq
	// Attempts count the runs of the handlers, as the status records them
	// (each is recorded before it runs) and, for a copy stored again, those
	// of the copies before it. The server's count of deliveries is no
	// attempt number: it also counts deliveries that never reached a handler
	// (lost on the way to a pull request that had ended, held by a receiver
	// that died before it ran them) and may go back in a crash; it only says
	// when the status is worth reading.
	before := atoi(h.Get(hdrBefore))
	attempt := max(before, st.last()) + 1
	if reason := notADelivery(h, msg.Data()); reason != "" {
		in.log.Error("inbox: not a delivery; moved to the dead letters", "seq", seq, "subject", msg.Subject(), "reason", reason)
		st.add(delivery.Attempt{Number: attempt, Start: time.Now(), Err: "inbox: not a delivery: " + reason})
		in.bury(ctx, msg, h, token, key, st, "inbox: not a delivery: "+reason)
		return
	}
	start := time.Now()
	// The attempt is recorded, and waited for, before it runs: after a
	// crash during it, the next one is numbered after it.
	st.add(delivery.Attempt{Number: attempt, Start: start})
	prev := st.Status
	st.Status = delivery.StatusRunning
	if perr := in.putStatus(ctx, key, st); perr != nil {
		_ = msg.NakWithDelay(statusRetryDelay)
		return
	}
	st.Status = prev
	st.Attempts = st.Attempts[:len(st.Attempts)-1]
	in.setRunning(key, true)
	if in.watchers.Active() {
		r := recordOf(h, nil, len(msg.Data()), seq, st)
		r.Status = delivery.StatusRunning
		in.notify(r)
	}
	err = in.run(ctx, msg.Data(), h, attempt, func() { _ = msg.InProgress() })
	dur := time.Since(start)
	in.setRunning(key, false)
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
	st.add(a)
	id := h.Get(hdrDelivery)
	switch {
	case err == nil:
		st.Status = delivery.StatusHandled
		// Written before the ack, and waited for (the writes of concurrent
		// deliveries share a record): a status lost after the ack would
		// show it queued for good. Without its status it runs again.
		if perr := in.putStatus(ctx, key, st); perr != nil {
			_ = msg.NakWithDelay(statusRetryDelay)
			return
		}
		if aerr := msg.Ack(); aerr != nil {
			in.log.Warn("inbox: acknowledging a handled delivery failed; it may run again", "delivery", id, "error", aerr)
		}
	case a.Final:
		in.log.Error("inbox: handlers failed with a final error; moved to the dead letters without a retry", "delivery", id, "event", h.Get(hdrEvent), "attempts", attempt, "error", err)
		in.bury(ctx, msg, h, token, key, st, a.Err)
		return
	case attempt-before <= len(in.opts.RetryDelays):
		// The schedule of this copy: retryDue reads it the same way.
		st.Status = delivery.StatusRetrying
		_ = in.putStatus(ctx, key, st)
		delay := in.opts.RetryDelays[attempt-before-1]
		in.log.Warn("inbox: handlers failed; retrying later", "delivery", id, "event", h.Get(hdrEvent), "attempt", attempt, "retry_in", delay, "error", err)
		if delay > 0 {
			_ = msg.NakWithDelay(delay)
		} else {
			_ = msg.Nak()
		}
	default:
		in.log.Error("inbox: handlers failed on every attempt; moved to the dead letters", "delivery", id, "event", h.Get(hdrEvent), "attempts", attempt, "error", err)
		in.bury(ctx, msg, h, token, key, st, a.Err)
		return
	}
	in.changed(h, msg.Data(), seq, st)
}

// final reports whether a failed attempt's error is final
// (webhooks.Permanent): the delivery goes to the dead letters after it,
// whatever retries its schedule has left.
func final(err error) bool { return webhooks.IsPermanent(err) }

// run calls the Receiver with the delivery, renewing its lease while the
// handlers run. A panic that escapes the Receiver is the attempt's error.
func (in *runner) run(ctx context.Context, data []byte, h nats.Header, attempt int, renewLease func()) (err error) {
	received, _ := time.Parse(time.RFC3339Nano, h.Get(hdrReceivedAt))
	id, event := h.Get(hdrDelivery), h.Get(hdrEvent)
	header := headerOf(h)
	// A delivery stored without its request's headers (library use) gets
	// those the forge would have sent.
	for _, kv := range [...][2]string{{webhooks.HeaderEvent, event}, {webhooks.HeaderDelivery, id}, {webhooks.HeaderSignature, h.Get(hdrSignature)}} {
		if kv[1] != "" && header.Get(kv[0]) == "" {
			header.Set(kv[0], kv[1])
		}
	}
	ctx = webhooks.ContextWithDelivery(ctx, webhooks.Delivery{
		ID: id, Name: event, Payload: data, Signature: h.Get(hdrSignature), Header: header,
		ReceivedAt: received, Attempt: attempt, Tenant: h.Get(hdrTenant),
	})
	// The lease is renewed from a timer, which costs no goroutine unless the
	// handlers outlast a third of AckWait.
	renew := &renewal{renew: renewLease, every: in.opts.AckWait / 3}
	renew.start()
	defer renew.stop()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("inbox: the receiver panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return in.opts.Receiver.Receive(ctx, emitter.Event{ID: id, Name: event, Payload: data})
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
func (in *runner) bury(ctx context.Context, msg jetstream.Msg, h nats.Header, token, key string, st *status, lastErr string) {
	if err := in.writeDead(ctx, msg.Data(), h, token, key, st, lastErr); err != nil {
		in.log.Error("inbox: writing a dead letter failed; the delivery stays in the inbox", "key", key, "error", err)
		_ = msg.NakWithDelay(time.Minute)
		return
	}
	_ = msg.Term()
}

// writeDead writes the dead letter of the stored copy st.Seq of a delivery,
// with its last error, then its status (dead). It returns an error when
// either write failed: the caller leaves the delivery in the inbox then.
func (in *Inbox) writeDead(ctx context.Context, data []byte, h nats.Header, token, key string, st *status, lastErr string) error {
	st.Status = delivery.StatusDead
	dm := &nats.Msg{Subject: in.deadSubj + token, Data: data, Header: make(nats.Header, len(h)+4)}
	for k, v := range h {
		if !strings.HasPrefix(strings.ToLower(k), "nats-") {
			dm.Header[k] = v
		}
	}
	dm.Header.Set(hdrKey, key)
	dm.Header.Set(hdrSeq, strconv.FormatUint(st.Seq, 10))
	dm.Header.Set(hdrError, firstLine(lastErr))
	dm.Header.Set(hdrAttempts, string(st.marshal()))
	// The id makes a second bury of the same copy (after a crash between the
	// two writes) a no-op.
	if _, err := in.js.PublishMsg(ctx, dm, jetstream.WithMsgID("dead."+key+"."+strconv.FormatUint(st.Seq, 10))); err != nil {
		return err
	}
	if err := in.putStatus(ctx, key, st); err != nil {
		// Ended without its status, it would list as running for good: the
		// caller leaves it in the inbox, it runs again later and is buried
		// then (the dead letter's id keeps it one).
		return fmt.Errorf("the dead letter's status: %w", err)
	}
	in.changed(h, data, st.Seq, st)
	return nil
}

// changed tells the watchers.
func (in *Inbox) changed(h nats.Header, data []byte, seq uint64, st *status) {
	if in.watchers.Active() {
		in.notify(recordOf(h, nil, len(data), seq, st))
	}
}

// loadStatus reads a status; nil when there is none (or it cannot be read:
// the status is a record of what happened, the delivery itself is in the
// stream).
func (in *Inbox) loadStatus(ctx context.Context, key string) *status {
	st, err := in.readStatus(ctx, key)
	if err != nil {
		in.log.Warn("inbox: reading a delivery's status", "key", key, "error", err)
	}
	return st
}

// statusUnread logs a status that could not be read by a caller that
// waits for it, unless the inbox is closing.
func (in *Inbox) statusUnread(key string, err error) {
	if !in.isClosed() {
		in.log.Warn("inbox: reading a delivery's status; it runs when the status can be read", "key", key, "error", err)
	}
}

// readStatus reads a status: nil and no error when there is none (or it
// is not a status), nil and the error when it cannot be read, which a
// caller that writes statuses must not take for none.
func (in *Inbox) readStatus(ctx context.Context, key string) (*status, error) {
	v, err := in.status.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st status
	if json.Unmarshal(v, &st) != nil {
		return nil, nil
	}
	return &st, nil
}

// putStatus writes a status and waits for the store's answer, waiting out
// what publishRetrying waits out; a failure is logged and returned.
func (in *Inbox) putStatus(ctx context.Context, key string, st *status) error {
	b := st.marshal()
	err := in.retrying(ctx, func(ctx context.Context) error { return in.status.PutWait(ctx, b, key) })
	if err != nil {
		in.log.Warn("inbox: writing a delivery's status", "key", key, "status", st.Status, "error", err)
	} else if in.quota != nil && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead) {
		in.quota.release(st.Seq)
	}
	return err
}

// statusRetryDelay is how long a delivery whose status could not be
// written waits before it runs again.
const statusRetryDelay = 5 * time.Second

// settled ends, without running it, a delivery handed out again whose
// status says it was handled or is a dead letter (its acknowledgement lost
// in a crash or an election), and reports whether it did.
func (in *Inbox) settled(msg jetstream.Msg, st *status) bool {
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

// notADelivery says why a stored message is not a delivery the inbox wrote,
// or returns "". A body whose size header Enqueue wrote was checked there
// (scanBody) and is trusted; any other (written by something else, or by an
// older version) is checked here, once per attempt.
func notADelivery(h nats.Header, data []byte) string {
	switch {
	case h.Get(hdrVersion) != "1":
		return "no " + hdrVersion + " header 1 (a message published by something else?)"
	case h.Get(hdrEvent) == "":
		return "no " + hdrEvent + " header"
	}
	if h.Get(hdrSize) != strconv.Itoa(len(data)) {
		if _, err := jsonscan.Scan(data); err != nil {
			return "the payload is not a JSON object: " + err.Error()
		}
	}
	return ""
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

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

func lastToken(subject string) string {
	return subject[strings.LastIndexByte(subject, '.')+1:]
}
