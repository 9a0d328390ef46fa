package runner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// Order per key, without one key holding back another.
//
// An ordered delivery is stored on its partition's subject; the partition's
// consumer hands its deliveries out one at a time, in stored order, to
// admit, which does not run them: it writes each into its key's record and
// acknowledges it, so that the partition goes on at once, whatever its
// delivery's handlers do. A key's record (bucket Name_KEYS, one record per
// key with a delivery running or waiting, seen by every receiver) names the
// delivery of the key that runs next (Head), the last one admitted (Tail),
// when Head may run (Due: now, or the end of its retry delay), and who runs
// it (Owner, until Lease). The deliveries admitted behind Head are parked,
// in stored order, on the key's subject of stream Name_PARKED.
//
// Any receiver runs a record whose Head is due and not leased (claiming it
// by a write conditional on the record's revision, so one wins); on success
// or a dead letter it makes the first parked delivery the Head, or deletes
// the record when none is parked; on a failure it leaves the record with
// Due at the end of the retry delay, holding back the later deliveries of
// its key and nothing else. A runner renews its lease while the handlers
// run; one that dies leaves its lease to run out (AckWait), then another
// runs Head again. In the embedded mode the directory lock proves the
// process before gone: its leases are taken over at once.
//
// Every change of a record is conditional on the revision read, so the
// admitting and the running receivers cannot lose each other's writes. A
// delivery is parked before the record's Tail names it, and a record is
// deleted only when its Tail is its Head: a record that still names parked
// deliveries is never deleted. A crash between two steps is repaired by the
// step done again: a delivery admitted but not acknowledged is handed out
// again by its partition and found already admitted (its sequence at most
// Tail), a parked entry left behind is older than its key's Head and
// dropped when met. The cost: a few record writes per ordered delivery.

// KeyRecord is the record of an order key (bucket Name_KEYS): see "Order
// per key" above. Skip, on the intake side, sets one due at once.
type KeyRecord struct {
	Key   string    `json:"key"`
	Head  uint64    `json:"head"`
	Tail  uint64    `json:"tail"`
	Due   time.Time `json:"due"`
	Owner string    `json:"owner,omitempty"`
	Lease time.Time `json:"lease,omitzero"`
	// Tenant is the tenant of the delivery that made the record, whose
	// share of the places its key takes (fair.go).
	Tenant string `json:"tenant,omitempty"`
}

// Marshal encodes the record as the bucket holds it.
func (r *KeyRecord) Marshal() []byte {
	b, _ := json.Marshal(r)
	return b
}

// KeyName is the record name of an order key: a digest, since keys are any
// string and record names are not.
func KeyName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:16])
}

// parkedSubject is the subject of a key's parked deliveries.
func (r *Runner) parkedSubject(name string) string { return r.cfg.Name + ".parked." + name }

// keyEntry is a record as last seen, with its revision.
type keyEntry struct {
	rec KeyRecord
	rev uint64
}

// Places, and handlers that hang.
//
// An ordered delivery runs in one of the runner's places (Places: the
// greater of Workers and OrderPartitions), besides the unordered workers.
// One whose handlers run past HandlerTimeout gives its place back, to be
// taken by another key, and goes on running: its key stays claimed and
// leased until its handlers return, so that nothing later of its key runs
// before it. At most OverdueFactor × Places deliveries run so without a
// place, a bound on what hanging handlers hold (a goroutine, a
// connection); past it an overdue delivery keeps its place. So ordered
// traffic stalls only when (OverdueFactor + 1) × Places handlers hang at
// once, and, until their timeout, Places of them delay the other keys.

// OverdueFactor times the places is how many ordered deliveries may run
// past HandlerTimeout without a place.
const OverdueFactor = 64

// Places is how many ordered deliveries run at once in one runner with
// workers workers and partitions order partitions.
func Places(workers, partitions int) int { return max(workers, partitions, 1) }

// keyRunner runs the ordered deliveries through their keys' records.
type keyRunner struct {
	r    *Runner
	id   string        // the Owner of this runner's claims
	sem  chan struct{} // one place per ordered delivery running (Places)
	kick chan struct{} // wakes the scheduler
	// overdue counts the deliveries running past HandlerTimeout without
	// a place; maxOverdue bounds it.
	overdue    atomic.Int64
	maxOverdue int64
	// waiting is set while due records wait for a place: a runner then
	// gives its key back after each delivery instead of keeping it.
	waiting atomic.Bool
	drops   chan uint64 // parked entries to delete (dropLoop)
	// seen is the last revision of the bucket the watch delivered;
	// watchdog signals stale when the watch falls behind.
	seen  atomic.Uint64
	stale chan struct{}

	mu   sync.Mutex
	recs map[string]keyEntry // the bucket as last seen, by record name
	busy map[string]bool     // records whose Head runs here
}

func newKeyRunner(r *Runner) *keyRunner {
	places := Places(r.cfg.Workers, r.cfg.OrderPartitions)
	return &keyRunner{r: r, id: rand.Text(), sem: make(chan struct{}, places), maxOverdue: int64(OverdueFactor * places),
		kick: make(chan struct{}, 1), recs: map[string]keyEntry{}, busy: map[string]bool{}, drops: make(chan uint64, 1024),
		stale: make(chan struct{}, 1)}
}

// place is the place a running key holds, which it gives back when its
// delivery runs past HandlerTimeout (see "Places" above).
type place struct {
	k       *keyRunner
	mu      sync.Mutex
	held    bool // the place is this key's
	overdue bool // counted in k.overdue
	done    bool // the handlers returned
	// what the log line of a give-back names
	key  string
	head uint64
}

// watch gives the place back once the handlers have run for HandlerTimeout,
// when the bound of overdue deliveries allows; the returned func, called
// when the handlers return, stops the watch.
func (p *place) watch(key string, head uint64) (stop func()) {
	d := p.k.r.cfg.HandlerTimeout
	if d <= 0 {
		return func() {}
	}
	p.mu.Lock()
	p.done, p.key, p.head = false, key, head
	p.mu.Unlock()
	t := time.AfterFunc(d, p.giveBack)
	return func() {
		t.Stop()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done = true
		if p.overdue {
			p.overdue = false
			p.k.overdue.Add(-1)
		}
	}
}

// giveBack gives the place of a delivery past HandlerTimeout back, unless
// its handlers returned or the bound of overdue deliveries is reached.
func (p *place) giveBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || !p.held {
		return
	}
	if p.k.overdue.Add(1) > p.k.maxOverdue {
		p.k.overdue.Add(-1)
		p.k.r.cfg.Logger.Warn("inbox: an ordered delivery's handlers run past HandlerTimeout and too many do already; it keeps its place",
			"order_key", p.key, "seq", p.head, "overdue", p.k.maxOverdue)
		return
	}
	p.held, p.overdue = false, true
	<-p.k.sem
	p.k.wake()
	p.k.r.cfg.Logger.Warn("inbox: an ordered delivery's handlers run past HandlerTimeout; its place goes to the other keys, its own key waits for it",
		"order_key", p.key, "seq", p.head, "timeout", p.k.r.cfg.HandlerTimeout)
}

// keep reports whether the key may run its next delivery at once: it holds
// its place, or takes a free one again after giving it back.
func (p *place) keep() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		return true
	}
	select {
	case p.k.sem <- struct{}{}:
		p.held = true
		return true
	default:
		return false
	}
}

// free gives the place back, if held.
func (p *place) free() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		<-p.k.sem
	}
}

// start follows the bucket and runs the scheduler until Close.
func (k *keyRunner) start() error {
	w, from, err := k.watch()
	if err != nil {
		return fmt.Errorf("inbox: watching the order keys: %w", err)
	}
	k.r.loops.Add(3)
	go k.follow(w, from)
	go k.schedule()
	go k.dropLoop()
	if !k.r.cfg.Embedded {
		k.r.loops.Add(1)
		go k.watchdog()
	}
	return nil
}

// keysBucket is the stream of the order keys' bucket.
func (k *keyRunner) keysBucket(ctx context.Context) (jetstream.Stream, error) {
	return k.r.cfg.JS.Stream(ctx, "KV_"+k.r.cfg.Name+"_KEYS")
}

// watch starts a watch of the bucket, which first delivers every record,
// and returns it with the bucket's last revision before it started (0 when
// unknown): once the watch has delivered the records present, it has seen
// that revision.
func (k *keyRunner) watch() (jetstream.KeyWatcher, uint64, error) {
	var from uint64
	ctx, cancel := context.WithTimeout(k.r.take.ctx, 10*time.Second)
	if st, err := k.keysBucket(ctx); err == nil {
		from = st.CachedInfo().State.LastSeq
	}
	cancel()
	w, err := k.r.cfg.Keys.WatchAll(k.r.take.ctx)
	return w, from, err
}

// keysWatchEvery is how often watchdog compares the watch with the bucket.
const keysWatchEvery = 2 * time.Second

// watchdog tells follow to watch again when the watch has not delivered,
// keysWatchEvery later, what the bucket held: in a cluster, a watch whose
// server is killed says nothing until its heartbeats are missed (about
// 10 s), and meanwhile this runner would not see the keys fall due.
func (k *keyRunner) watchdog() {
	defer k.r.loops.Done()
	t := time.NewTicker(keysWatchEvery)
	defer t.Stop()
	var before uint64 // the bucket's last revision at the check before
	for {
		select {
		case <-k.r.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(k.r.take.ctx, keysWatchEvery)
		st, err := k.keysBucket(ctx)
		cancel()
		if err != nil {
			continue // no leader: checked again when there is one
		}
		if before > 0 && k.seen.Load() < before {
			select {
			case k.stale <- struct{}{}:
			default:
			}
			before = 0
			continue
		}
		before = st.CachedInfo().State.LastSeq
	}
}

func (k *keyRunner) wake() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// follow keeps recs as the bucket has it; from is the bucket's last
// revision when the watch w started.
func (k *keyRunner) follow(w jetstream.KeyWatcher, from uint64) {
	defer k.r.loops.Done()
	defer func() { _ = w.Stop() }()
	for {
		var e jetstream.KeyValueEntry
		ok, stale := true, false
		select {
		case <-k.r.closing:
			return
		case <-k.stale:
			stale = true
		case e, ok = <-w.Updates():
		}
		if !ok || stale {
			if k.r.isClosed() {
				return
			}
			if stale {
				k.r.cfg.Logger.Warn("inbox: the watch of the order keys fell behind (its server lost?); watching again")
			} else {
				k.r.cfg.Logger.Warn("inbox: the watch of the order keys ended; watching again")
				time.Sleep(time.Second)
			}
			nw, nfrom, err := k.watch()
			if err != nil {
				continue
			}
			_ = w.Stop()
			w, from = nw, nfrom
			// The new watch delivers every record present: records
			// deleted meanwhile, whose markers may be purged, must not
			// stay here.
			k.mu.Lock()
			k.recs = map[string]keyEntry{}
			k.mu.Unlock()
			continue
		}
		if e == nil {
			// The records present at the start are all read.
			if from > k.seen.Load() {
				k.seen.Store(from)
			}
			continue
		}
		if e.Revision() > k.seen.Load() {
			k.seen.Store(e.Revision())
		}
		k.mu.Lock()
		if e.Operation() == jetstream.KeyValuePut {
			var rec KeyRecord
			if json.Unmarshal(e.Value(), &rec) == nil {
				if cur, ok := k.recs[e.Key()]; !ok || cur.rev < e.Revision() {
					k.recs[e.Key()] = keyEntry{rec, e.Revision()}
				}
			}
		} else {
			delete(k.recs, e.Key())
		}
		k.mu.Unlock()
		k.wake()
	}
}

// schedule claims the records whose Head is due, oldest first, while a
// place is free.
func (k *keyRunner) schedule() {
	defer k.r.loops.Done()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	purge := time.NewTicker(keysPurgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-k.r.closing:
			return
		case <-k.kick:
		case <-t.C:
		case <-purge.C:
			k.purgeDeleted()
		}
		next := k.claimDue()
		t.Reset(min(max(time.Until(next), time.Millisecond), time.Second))
	}
}

// keysPurgeEvery is how often the markers of deleted records are dropped.
const keysPurgeEvery = 10 * time.Minute

// purgeDeleted drops the markers the bucket keeps of records deleted
// more than keysPurgeEvery ago (one per key ever seen, else). Each is purged
// up to its own sequence only, so that a record created again meanwhile
// stays.
func (k *keyRunner) purgeDeleted() {
	ctx, cancel := context.WithTimeout(k.r.handlers.ctx, time.Minute)
	defer cancel()
	st, err := k.r.cfg.JS.Stream(ctx, "KV_"+k.r.cfg.Name+"_KEYS")
	if err != nil {
		return
	}
	w, err := k.r.cfg.Keys.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return
	}
	defer func() { _ = w.Stop() }()
	var markers []jetstream.KeyValueEntry
	for e := range w.Updates() {
		if e == nil {
			break
		}
		if e.Operation() != jetstream.KeyValuePut && time.Since(e.Created()) > keysPurgeEvery {
			markers = append(markers, e)
		}
	}
	for _, e := range markers {
		_ = st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+k.r.cfg.Name+"_KEYS."+e.Key()), jetstream.WithPurgeSequence(e.Revision()+1))
	}
}

// claimDue claims the due records it has places for and starts running
// their Heads; it returns when the next record falls due.
func (k *keyRunner) claimDue() time.Time {
	now := time.Now()
	next := now.Add(time.Second)
	type cand struct {
		name string
		e    keyEntry
	}
	var due []cand
	k.mu.Lock()
	for name, e := range k.recs {
		if k.busy[name] {
			continue
		}
		at := e.rec.Due
		switch {
		case e.rec.Owner == "":
		case e.rec.Owner != k.id && k.r.cfg.Embedded:
			// Embedded: the directory lock proves the owner gone.
			at = time.Time{}
		default:
			at = e.rec.Lease
		}
		if at.After(now) {
			if at.Before(next) {
				next = at
			}
			continue
		}
		due = append(due, cand{name, e})
	}
	running := map[string]int{}
	for name := range k.busy {
		running[k.recs[name].rec.Tenant]++
	}
	k.mu.Unlock()
	// Oldest first by when the Head fell due, not by when its lease ran
	// out: the keys of a receiver that died have waited for its lease, and
	// go before the keys given back a moment ago, so that they catch up
	// with the others instead of taking their turn behind them.
	slices.SortFunc(due, func(a, b cand) int { return a.e.rec.Due.Compare(b.e.rec.Due) })
	due = fairShare(due, func(c cand) string { return c.e.rec.Tenant }, running)
	k.waiting.Store(false)
	for i, c := range due {
		select {
		case k.sem <- struct{}{}:
		default:
			k.waiting.Store(len(due) > i)
			return next // woken again when a place is free
		}
		rec := c.e.rec
		rec.Owner, rec.Lease = k.id, now.Add(k.r.cfg.AckWait)
		ctx, cancel := context.WithTimeout(k.r.handlers.ctx, 10*time.Second)
		rev, err := k.r.cfg.Keys.Update(ctx, c.name, rec.Marshal(), c.e.rev)
		cancel()
		if err != nil {
			<-k.sem // taken by another receiver, or changed: seen again through follow
			continue
		}
		if !k.launch(c.name, rec, rev) {
			return next
		}
	}
	return next
}

// fairShare orders cands (oldest first) so that each next one is of the
// tenant with the fewest running, counting those before it as running, the
// oldest among those tied: a tenant with many keys due takes no more than
// its share of the places (fair.go).
func fairShare[T any](cands []T, tenantOf func(T) string, running map[string]int) []T {
	if len(cands) < 2 {
		return cands
	}
	groups := map[string][]T{}
	var order []string // the tenants, by their oldest candidate
	for _, c := range cands {
		t := tenantOf(c)
		if _, ok := groups[t]; !ok {
			order = append(order, t)
		}
		groups[t] = append(groups[t], c)
	}
	if len(order) == 1 {
		return cands
	}
	out := make([]T, 0, len(cands))
	for len(out) < len(cands) {
		best := ""
		found := false
		for _, t := range order {
			if len(groups[t]) > 0 && (!found || running[t] < running[best]) {
				best, found = t, true
			}
		}
		out = append(out, groups[best][0])
		groups[best] = groups[best][1:]
		running[best]++
	}
	return out
}

// launch runs the Head of a record claimed here, holding a place already
// taken; false (the place given back) once Close was called.
func (k *keyRunner) launch(name string, rec KeyRecord, rev uint64) bool {
	if !k.r.begin() {
		<-k.sem
		return false
	}
	k.mu.Lock()
	k.busy[name] = true
	k.mu.Unlock()
	p := &place{k: k, held: true}
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.busy, name)
			k.mu.Unlock()
			p.free()
			k.r.active.Done()
			k.wake()
		}()
		k.runHead(name, rec, rev, p)
	}()
	return true
}

// orderKeyOf returns the order key of a stored ordered delivery: its
// header's, or, stored before the header was written, OrderBy's.
func (k *keyRunner) orderKeyOf(h nats.Header, data []byte) string {
	if key := h.Get(stored.HeaderOrderKey); key != "" {
		return key
	}
	if k.r.cfg.OrderBy == nil {
		return ""
	}
	return stored.ClipKey(k.r.cfg.OrderBy(webhooks.Delivery{ID: h.Get(stored.HeaderDelivery), Name: h.Get(stored.HeaderEvent), Header: stored.HTTPHeader(h), Payload: data}))
}

// admit writes an ordered delivery, handed out by its partition, into its
// key's record (its Head when the key has none, else parked behind the
// others) and acknowledges it to the partition. A delivery without a key
// (ordering switched off since it was stored) runs as it comes.
func (k *keyRunner) admit(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	h := msg.Headers()
	if h == nil {
		h = nats.Header{}
	}
	key := k.orderKeyOf(h, msg.Data())
	if err != nil || key == "" {
		k.r.handle(msg)
		return
	}
	ctx, cancel := context.WithTimeout(k.r.handlers.ctx, 30*time.Second)
	defer cancel()
	seq, name := meta.Sequence.Stream, KeyName(key)
	if meta.NumDelivered > 1 {
		// Handed out again (an acknowledgement lost, a crash): it may have
		// run since, and its key's record gone with it, so that admitting
		// it again would run it after the later deliveries of its key. A
		// status that cannot be read is no proof that it did not run.
		st, err := k.r.cfg.Intake.ReadStatus(ctx, stored.StatusKey(h, stored.TokenOf(h, msg.Subject()), seq))
		if err != nil {
			k.admitFailed(msg, fmt.Errorf("reading its status: %w", err))
			return
		}
		if st != nil && st.Seq == seq && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead) {
			_ = msg.Ack()
			return
		}
	}
	parked := false
	for i := range 100 {
		// The first try writes on the record as the watch has it, sparing
		// a read: a copy out of date only fails its conditional write, and
		// the tries after it read the record.
		var rec KeyRecord
		var rev uint64
		var err error
		if i == 0 {
			k.mu.Lock()
			c, ok := k.recs[name]
			k.mu.Unlock()
			if ok {
				rec, rev = c.rec, c.rev
			} else {
				err = jetstream.ErrKeyNotFound
			}
		} else {
			var e jetstream.KeyValueEntry
			if e, err = k.r.cfg.Keys.Get(ctx, name); err == nil {
				rev = e.Revision()
				if json.Unmarshal(e.Value(), &rec) != nil {
					k.r.cfg.Logger.Error("inbox: an order key's record is not JSON; dropped", "record", name)
					_ = k.r.cfg.Keys.Delete(ctx, name, jetstream.LastRevision(rev))
					continue
				}
			}
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rec := KeyRecord{Key: stored.ClipKey(key), Head: seq, Tail: seq, Due: time.Now(), Tenant: h.Get(stored.HeaderTenant)}
			// Run here at once when a place is free; else the scheduler of
			// whichever receiver has one takes it.
			placed := false
			select {
			case k.sem <- struct{}{}:
				placed = true
				rec.Owner, rec.Lease = k.id, time.Now().Add(k.r.cfg.AckWait)
			default:
			}
			rev, err := k.r.cfg.Keys.Create(ctx, name, rec.Marshal())
			if err != nil {
				if placed {
					<-k.sem
				}
				if errors.Is(err, jetstream.ErrKeyExists) {
					continue
				}
				k.admitFailed(msg, err)
				return
			}
			_ = msg.Ack()
			if placed {
				k.launch(name, rec, rev)
			}
			return
		}
		if err != nil {
			k.admitFailed(msg, err)
			return
		}
		if seq <= rec.Tail {
			_ = msg.Ack() // admitted already, before a crash or a lost acknowledgement
			return
		}
		if !parked {
			// Parked first, named by the record second: a record never
			// names a delivery that is not parked.
			pm := &nats.Msg{Subject: k.r.parkedSubject(name), Header: nats.Header{stored.HeaderSeq: {strconv.FormatUint(seq, 10)}}}
			if _, err := k.r.cfg.JS.PublishMsg(ctx, pm, jetstream.WithMsgID("park."+name+"."+strconv.FormatUint(seq, 10))); err != nil {
				k.admitFailed(msg, err)
				return
			}
			parked = true
		}
		rec.Tail = seq
		if _, err := k.r.cfg.Keys.Update(ctx, name, rec.Marshal(), rev); err != nil {
			if IsWrongRevision(err) {
				continue
			}
			k.admitFailed(msg, err)
			return
		}
		_ = msg.Ack()
		return
	}
	k.admitFailed(msg, errors.New("the key's record kept changing"))
}

// admitFailed hands a delivery back to its partition, to be admitted again.
func (k *keyRunner) admitFailed(msg jetstream.Msg, err error) {
	if !k.r.isClosed() {
		k.r.cfg.Logger.Warn("inbox: admitting an ordered delivery; its partition hands it out again", "subject", msg.Subject(), "error", err)
	}
	_ = msg.NakWithDelay(time.Second)
}

// errCodeWrongLastSequenceConstant is the server's "wrong last sequence"
// without the sequence found, which the client names no constant for.
const errCodeWrongLastSequenceConstant jetstream.ErrorCode = 10164

// IsWrongRevision reports a conditional write that found another revision.
func IsWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == errCodeWrongLastSequenceConstant) ||
		errors.Is(err, jetstream.ErrKeyExists)
}

// runHead runs the Head of a record claimed here and settles it: the next
// parked delivery becomes the Head (or the record goes) when it succeeded,
// is a dead letter, or was settled already; a failure with retries left
// gives the record back, due after its delay.
func (k *keyRunner) runHead(name string, rec KeyRecord, rev uint64, p *place) {
	var m *jetstream.RawStreamMsg
	for {
		next, nm := k.runOne(name, rec, rev, p, m)
		if next == nil {
			return
		}
		rec, rev, m = next.rec, next.rev, nm
	}
}

// runOne runs the Head of a record claimed here (at revision rev) and
// settles it (see runHead); m is the Head's stored delivery when read
// already. It returns the record when this runner keeps it to run its next
// Head at once (no other key waits for a place, and it holds one), else
// nil, with the next Head's stored delivery when read ahead.
func (k *keyRunner) runOne(name string, rec KeyRecord, rev uint64, p *place, m *jetstream.RawStreamMsg) (*keyEntry, *jetstream.RawStreamMsg) {
	l := &keyLease{k: k, name: name, head: rec.Head, rec: rec, rev: rev}
	defer l.settle()
	next := k.runLeased(l, p, m)
	if next != nil && l.ahead != nil && l.ahead.msg != nil && l.ahead.msg.Sequence == next.rec.Head {
		return next, l.ahead.msg
	}
	return next, nil
}

// runLeased is runOne's work, on the record as l holds it.
func (k *keyRunner) runLeased(l *keyLease, p *place, m *jetstream.RawStreamMsg) *keyEntry {
	ctx := k.r.handlers.ctx
	rec, head := l.rec, l.head
	var err error
	if m == nil || m.Sequence != head {
		m, err = k.r.leaderMsg(ctx, k.r.cfg.Inbox, head)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return k.advance(l, p) // aged out of the stream (MaxAge)
	}
	if err != nil {
		if !k.r.isClosed() {
			k.r.cfg.Logger.Warn("inbox: reading an ordered delivery", "seq", head, "error", err)
		}
		k.release(l, time.Now().Add(time.Second))
		return nil
	}
	h := m.Header
	if h == nil {
		h = nats.Header{}
	}
	token := stored.TokenOf(h, m.Subject)
	key := stored.StatusKey(h, token, head)
	st, err := k.r.cfg.Intake.ReadStatus(ctx, key)
	if err != nil {
		// Not taken for none: the Head may have run already.
		k.r.statusUnread(key, err)
		k.release(l, time.Now().Add(time.Second))
		return nil
	}
	switch {
	case st != nil && st.Seq == head && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead):
		return k.advance(l, p) // ran before a crash, or set aside (Skip)
	case st != nil && st.Seq > head:
		return k.advance(l, p) // stored again (Replay): the later copy runs in its turn
	case st == nil:
		st = &stored.Status{}
	}
	st.Seq = head
	chk, err := k.r.cfg.Intake.Check(h, m.Data)
	if err != nil {
		k.r.cfg.Logger.Error("inbox: a delivery that cannot run; moved to the dead letters", "seq", head, "subject", m.Subject, "reason", err)
		st.Add(delivery.Attempt{Number: st.Last() + 1, Start: time.Now(), Err: err.Error()})
		return k.buryHead(ctx, l, m.Data, h, token, key, st, err.Error(), p)
	}
	before := stored.Int(h.Get(stored.HeaderBefore))
	attempt := max(before, st.Last()) + 1
	start := time.Now()
	// The attempt is recorded, and waited for, before it runs, as the
	// workers do: after a crash during it, the next one is numbered after
	// it.
	st.Add(delivery.Attempt{Number: attempt, Start: start})
	prev := st.Status
	st.Status = delivery.StatusRunning
	if k.r.putStatus(ctx, key, st) != nil {
		k.release(l, time.Now().Add(statusRetryDelay))
		return nil
	}
	st.Status = prev
	st.Attempts = st.Attempts[:len(st.Attempts)-1]
	if !l.hold() {
		// Taken over: the other receiver runs the Head, and settles it.
		return nil
	}
	k.r.setRunning(key, true)
	k.r.changedRunning(h, m.Data, head, st)
	l.readAhead(rec.Tail)
	stopWatch := p.watch(rec.Key, head)
	renew := startRenewal(l.renew, k.r.cfg.AckWait/3)
	err = k.r.run(ctx, m.Data, h, attempt, chk)
	renew.stop()
	stopWatch()
	dur := time.Since(start)
	k.r.setRunning(key, false)
	if errors.Is(err, emitter.ErrClosed) {
		k.release(l, time.Now())
		return nil
	}
	a := delivery.Attempt{Number: attempt, Start: start, Duration: dur}
	if err != nil {
		a.Err = describe(err)
		a.Final = final(err)
	}
	st.Add(a)
	id := h.Get(stored.HeaderDelivery)
	tries := attempt - before
	var next *keyEntry
	switch {
	case err == nil:
		st.Status = delivery.StatusHandled
		// Written and waited for before the key goes on: without its
		// status it runs again, before anything later of its key.
		if perr := k.r.putStatus(ctx, key, st); perr != nil {
			k.release(l, time.Now().Add(statusRetryDelay))
			return nil
		}
		next = k.advance(l, p)
	case k.r.retries(err, tries):
		st.Status = delivery.StatusRetrying
		_ = k.r.putStatus(ctx, key, st)
		delay := k.r.cfg.RetryDelays[tries-1]
		k.r.cfg.Logger.Warn("inbox: handlers failed; retrying later, the later deliveries of its key wait", "delivery", id, "event", h.Get(stored.HeaderEvent),
			"order_key", rec.Key, "attempt", attempt, "retry_in", delay, "error", err)
		k.release(l, time.Now().Add(delay))
	case a.Final:
		k.r.cfg.Logger.Error("inbox: handlers failed with a final error; moved to the dead letters without a retry, the later deliveries of its key go on",
			"delivery", id, "event", h.Get(stored.HeaderEvent), "order_key", rec.Key, "attempts", attempt, "error", err)
		return k.buryHead(ctx, l, m.Data, h, token, key, st, a.Err, p)
	default:
		k.r.cfg.Logger.Error("inbox: handlers failed on every attempt; moved to the dead letters", "delivery", id, "event", h.Get(stored.HeaderEvent), "attempts", attempt, "error", err)
		return k.buryHead(ctx, l, m.Data, h, token, key, st, a.Err, p)
	}
	k.r.cfg.Intake.Changed(h, m.Data, head, st)
	return next
}

// buryHead makes the Head a dead letter and lets its key go on; when the dead
// letter cannot be written the Head is tried again a minute later.
func (k *keyRunner) buryHead(ctx context.Context, l *keyLease, data []byte, h nats.Header, token, key string, st *stored.Status, lastErr string, p *place) *keyEntry {
	if err := k.r.cfg.Intake.Bury(ctx, data, h, token, key, st, lastErr); err != nil {
		k.r.cfg.Logger.Error("inbox: writing a dead letter failed; the delivery stays at the head of its key", "key", key, "error", err)
		k.release(l, time.Now().Add(time.Minute))
		return nil
	}
	return k.advance(l, p)
}

// update applies change to the record of l while its Head is l's,
// conditionally on its revision, reading it again on a conflict. change
// returns write false to leave the record as it is, keep false to delete
// it. It gives up (leaving the lease to run out) on other errors, and
// reports whether its change was written, with the record's new revision.
// The first try changes the record as l last wrote it, sparing a read: if
// another wrote since, its conditional write fails and the next reads.
func (k *keyRunner) update(l *keyLease, change func(*KeyRecord) (keep, write bool)) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := l.name
	for i := range 100 {
		var rec KeyRecord
		var at uint64
		if i == 0 {
			rec, at = l.known()
		}
		if at == 0 {
			e, err := k.r.cfg.Keys.Get(ctx, name)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return 0, false
			}
			if err != nil {
				if !k.r.isClosed() {
					k.r.cfg.Logger.Warn("inbox: reading an order key's record", "record", name, "error", err)
				}
				return 0, false
			}
			if json.Unmarshal(e.Value(), &rec) != nil {
				return 0, false
			}
			at = e.Revision()
		}
		if rec.Head != l.head {
			return 0, false // another receiver took it over
		}
		keep, write := change(&rec)
		if !write {
			return 0, false
		}
		var rev uint64
		var err error
		if keep {
			rev, err = k.r.cfg.Keys.Update(ctx, name, rec.Marshal(), at)
		} else {
			err = k.r.cfg.Keys.Delete(ctx, name, jetstream.LastRevision(at))
		}
		if err == nil {
			l.wrote(rec, rev)
			return rev, true
		}
		if !IsWrongRevision(err) {
			if !k.r.isClosed() {
				k.r.cfg.Logger.Warn("inbox: writing an order key's record", "record", name, "error", err)
			}
			return 0, false
		}
	}
	return 0, false
}

// release gives the record back, its Head due at due.
func (k *keyRunner) release(l *keyLease, due time.Time) {
	_, _ = k.update(l, func(r *KeyRecord) (bool, bool) {
		if r.Owner != k.id {
			return true, false
		}
		r.Owner, r.Lease, r.Due = "", time.Time{}, due
		return true, true
	})
}

// advance makes the first delivery parked behind head the record's Head,
// due now, or deletes the record when none is. It keeps the record claimed
// and returns it, for its runner to run the new Head at once, unless
// another key waits for a place (then the scheduler gives each its turn).
func (k *keyRunner) advance(l *keyLease, p *place) *keyEntry {
	name, head := l.name, l.head
	var taken uint64 // the parked entry that became the Head
	var next KeyRecord
	rev, written := k.update(l, func(r *KeyRecord) (bool, bool) {
		taken = 0
		if r.Owner != k.id {
			// Taken over after the lease ran out: the new owner runs the
			// Head again, and moving on under it would let the next
			// delivery run, and finish, before that run.
			return true, false
		}
		if r.Tail <= head {
			return false, true
		}
		seq, pseq, err := l.nextParked(r.Tail)
		if err != nil {
			if !k.r.isClosed() {
				k.r.cfg.Logger.Warn("inbox: reading the parked deliveries of a key", "record", name, "error", err)
			}
			return true, false
		}
		if seq == 0 {
			// The record names deliveries the stream lost: nothing to wait for.
			k.r.cfg.Logger.Error("inbox: an order key's record names parked deliveries that are gone; its key goes on", "order_key", r.Key, "head", head, "tail", r.Tail)
			return false, true
		}
		taken = pseq
		r.Head, r.Due, r.Owner, r.Lease = seq, time.Now(), "", time.Time{}
		if !k.waiting.Load() && !k.r.isClosed() && p.keep() {
			r.Owner, r.Lease = k.id, time.Now().Add(k.r.cfg.AckWait)
		}
		next = *r
		return true, true
	})
	if written && taken > 0 {
		k.dropParked(taken)
	}
	k.wake()
	if !written || taken == 0 || next.Owner != k.id {
		return nil
	}
	return &keyEntry{next, rev}
}

// dropParked deletes a parked entry that became a Head, without waiting:
// one left behind (a crash, a lost write) is dropped when next met.
func (k *keyRunner) dropParked(seq uint64) {
	select {
	case k.drops <- seq:
	default:
	}
}

// dropLoop deletes the parked entries dropParked hands it, until Close.
func (k *keyRunner) dropLoop() {
	defer k.r.loops.Done()
	for {
		select {
		case <-k.r.closing:
			return
		case seq := <-k.drops:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = k.r.cfg.Parked.DeleteMsg(ctx, seq)
			cancel()
		}
	}
}

// nextParked returns the first delivery parked behind head on the key's
// subject and the sequence of its entry; 0 when none is. Entries at or
// before head (left by a crash, or written twice) are dropped on the way.
func (k *keyRunner) nextParked(name string, head uint64) (seq, entry uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subj := k.r.parkedSubject(name)
	from := uint64(1)
	for {
		m, err := k.r.cfg.Parked.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, 0, nil
		}
		if err != nil {
			return 0, 0, err
		}
		s, _ := strconv.ParseUint(m.Header.Get(stored.HeaderSeq), 10, 64)
		if s > head {
			return s, m.Sequence, nil
		}
		_ = k.r.cfg.Parked.DeleteMsg(ctx, m.Sequence)
		from = m.Sequence + 1
	}
}

// keyLease is the claim on a record while its Head runs here: the record
// as last written here, which renew keeps leased, and what is read of the
// next Head meanwhile.
type keyLease struct {
	k    *keyRunner
	name string
	head uint64

	mu  sync.Mutex
	rec KeyRecord // the record as last written here
	rev uint64    // its revision; 0 when deleted

	ahead *ahead // nil when nothing is read ahead
}

// known returns the record as last written here, and its revision.
func (l *keyLease) known() (KeyRecord, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec, l.rev
}

// wrote notes a write of the record: rev 0 for its deletion.
func (l *keyLease) wrote(rec KeyRecord, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec, l.rev = rec, rev
}

// ahead is the next Head of a key, read while the Head before it runs:
// its parked entry (nextParked's answer) and its stored delivery. The
// delivery is immutable, and a parked entry after the Head stays until it
// becomes the Head itself, so what is read ahead stays true; whether the
// next Head may run (its status) is read when it runs.
type ahead struct {
	done       chan struct{}
	seq, entry uint64
	err        error
	msg        *jetstream.RawStreamMsg
}

// readAhead starts reading the next Head when the record, as claimed
// (tail), names deliveries parked behind the Head: the reads the key then
// waits for between two deliveries are the writes that settle one.
func (l *keyLease) readAhead(tail uint64) {
	if tail <= l.head {
		return
	}
	a := &ahead{done: make(chan struct{})}
	l.ahead = a
	go func() {
		defer close(a.done)
		a.seq, a.entry, a.err = l.k.nextParked(l.name, l.head)
		if a.err == nil && a.seq > 0 {
			a.msg, _ = l.k.r.leaderMsg(l.k.r.handlers.ctx, l.k.r.cfg.Inbox, a.seq)
		}
	}()
}

// nextParked is keyRunner.nextParked after l's Head, answered from what was
// read ahead when that names a delivery up to tail, the record's Tail.
func (l *keyLease) nextParked(tail uint64) (seq, entry uint64, err error) {
	if a := l.ahead; a != nil {
		<-a.done
		if a.err == nil && a.seq > l.head && a.seq <= tail {
			return a.seq, a.entry, nil
		}
	}
	return l.k.nextParked(l.name, l.head)
}

// settle waits for the read ahead, so that nothing of the run outlives it.
func (l *keyLease) settle() {
	if l.ahead != nil {
		<-l.ahead.done
	}
}

// hold reports whether the record is still claimed here, renewing the
// lease first when a third of it has passed since it was written: the
// reads and the status write before the handlers may outlast the lease
// (a loaded machine, a node lost), and another receiver may have claimed
// the Head meanwhile, so the handlers run only on a lease held.
func (l *keyLease) hold() bool {
	rec, rev := l.known()
	if rev != 0 && rec.Owner == l.k.id && time.Until(rec.Lease) > l.k.r.cfg.AckWait*2/3 {
		return true
	}
	return l.extend()
}

// renew extends the lease while the handlers run (startRenewal).
func (l *keyLease) renew() { l.extend() }

// extend extends the lease of the record, reporting whether it was
// written: false when another receiver took the record over, or the write
// failed.
func (l *keyLease) extend() bool {
	_, ok := l.k.update(l, func(r *KeyRecord) (bool, bool) {
		if r.Owner != l.k.id {
			return true, false // lost: another receiver runs it too (at least once)
		}
		r.Lease = time.Now().Add(l.k.r.cfg.AckWait)
		return true, true
	})
	return ok
}

// leaderMsg reads the message at seq of st; in a cluster from the stream's
// leader, since a direct read (AllowDirect) may be answered by a replica
// that does not hold it yet: an ordered delivery just stored would pass for
// one gone.
func (r *Runner) leaderMsg(ctx context.Context, st jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	if r.cfg.Embedded {
		return st.GetMsg(ctx, seq)
	}
	return recstore.LeaderMsg(ctx, r.cfg.Conn, st.CachedInfo().Config.Name, seq)
}
