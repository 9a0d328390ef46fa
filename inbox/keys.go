package inbox

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

// hdrOrderKey, on an ordered delivery, is its key (clipped to maxOrderKey).
const hdrOrderKey = "Forgehooks-Order-Key"

// maxOrderKey bounds the key kept in a header and a record.
const maxOrderKey = 256

// keyRecord is a key's record: see above.
type keyRecord struct {
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

func (r *keyRecord) marshal() []byte {
	b, _ := json.Marshal(r)
	return b
}

// keyName is the record name of an order key: a digest, since keys are any
// string and record names are not.
func keyName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:16])
}

// clipKey bounds a key as it is stored.
func clipKey(key string) string {
	if len(key) > maxOrderKey {
		return key[:maxOrderKey]
	}
	return key
}

// parkedSubject is the subject of a key's parked deliveries.
func (in *Inbox) parkedSubject(name string) string { return in.opts.Name + ".parked." + name }

// setupKeys creates the bucket of the keys' records and the stream of the
// parked deliveries.
func (in *Inbox) setupKeys(ctx context.Context) error {
	o := in.opts
	var err error
	in.keyBucket, err = in.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      o.Name + "_KEYS",
		Description: "forgehooks: the order keys with a delivery running or waiting",
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("inbox: creating bucket %s_KEYS: %w", o.Name, err)
	}
	if in.ns == nil {
		// A runner must see at once what another wrote.
		if in.keyBucket, err = in.leaderReads(ctx, o.Name+"_KEYS"); err != nil {
			return err
		}
	}
	// No direct reads from replicas: a runner must see a parked delivery
	// as soon as the record naming it is written.
	in.parked, err = in.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        o.Name + "_PARKED",
		Description: "forgehooks: ordered deliveries waiting for the one before them of their key",
		Subjects:    []string{o.Name + ".parked.>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      o.MaxAge,
		Duplicates:  jsDuplicates,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("inbox: creating stream %s_PARKED: %w", o.Name, err)
	}
	return nil
}

// leaderReads makes the reads of a cluster's bucket go to its leader and
// returns the bucket so opened. A direct read (AllowDirect, a bucket's
// default) may be answered by a replica that lags, for seconds while a
// leader is elected: a record just written would pass for one missing.
func (in *Inbox) leaderReads(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	st, err := in.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("inbox: bucket %s: %w", bucket, err)
	}
	if cfg := st.CachedInfo().Config; cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := in.js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("inbox: bucket %s: %w", bucket, err)
		}
	}
	kv, err := in.js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("inbox: bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// keyEntry is a record as last seen, with its revision.
type keyEntry struct {
	rec keyRecord
	rev uint64
}

// keyRunner runs the ordered deliveries through their keys' records.
type keyRunner struct {
	*runner
	id   string        // the Owner of this runner's claims
	sem  chan struct{} // one place per ordered delivery running (OrderPartitions)
	kick chan struct{} // wakes the scheduler
	// waiting is set while due records wait for a place: a runner then
	// gives its key back after each delivery instead of keeping it.
	waiting atomic.Bool
	drops   chan uint64 // parked entries to delete (dropLoop)

	mu   sync.Mutex
	recs map[string]keyEntry // the bucket as last seen, by record name
	busy map[string]bool     // records whose Head runs here
}

func newKeyRunner(r *runner) *keyRunner {
	return &keyRunner{runner: r, id: rand.Text(), sem: make(chan struct{}, r.opts.OrderPartitions),
		kick: make(chan struct{}, 1), recs: map[string]keyEntry{}, busy: map[string]bool{}, drops: make(chan uint64, 1024)}
}

// start follows the bucket and runs the scheduler until Close.
func (k *keyRunner) start(ctx context.Context) error {
	w, err := k.keyBucket.WatchAll(k.takeCtx)
	if err != nil {
		return fmt.Errorf("inbox: watching the order keys: %w", err)
	}
	k.loops.Add(3)
	go k.follow(w)
	go k.schedule()
	go k.dropLoop()
	return nil
}

func (k *keyRunner) wake() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// follow keeps recs as the bucket has it.
func (k *keyRunner) follow(w jetstream.KeyWatcher) {
	defer k.loops.Done()
	defer func() { _ = w.Stop() }()
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-k.closing:
			return
		case e, ok = <-w.Updates():
		}
		if !ok {
			if k.isClosed() {
				return
			}
			k.log.Warn("inbox: the watch of the order keys ended; watching again")
			time.Sleep(time.Second)
			nw, err := k.keyBucket.WatchAll(k.takeCtx)
			if err != nil {
				continue
			}
			_ = w.Stop()
			w = nw
			continue
		}
		if e == nil {
			continue // the records present at the start are all read
		}
		k.mu.Lock()
		if e.Operation() == jetstream.KeyValuePut {
			var rec keyRecord
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
	defer k.loops.Done()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	purge := time.NewTicker(keysPurgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-k.closing:
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
	ctx, cancel := context.WithTimeout(k.handlerCtx, time.Minute)
	defer cancel()
	st, err := k.js.Stream(ctx, "KV_"+k.opts.Name+"_KEYS")
	if err != nil {
		return
	}
	w, err := k.keyBucket.WatchAll(ctx, jetstream.MetaOnly())
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
		_ = st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+k.opts.Name+"_KEYS."+e.Key()), jetstream.WithPurgeSequence(e.Revision()+1))
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
		at   time.Time
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
		case e.rec.Owner != k.id && k.ns != nil:
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
		due = append(due, cand{name, e, at})
	}
	running := map[string]int{}
	for name := range k.busy {
		running[k.recs[name].rec.Tenant]++
	}
	k.mu.Unlock()
	slices.SortFunc(due, func(a, b cand) int { return a.at.Compare(b.at) })
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
		rec.Owner, rec.Lease = k.id, now.Add(k.opts.AckWait)
		ctx, cancel := context.WithTimeout(k.handlerCtx, 10*time.Second)
		rev, err := k.keyBucket.Update(ctx, c.name, rec.marshal(), c.e.rev)
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
func (k *keyRunner) launch(name string, rec keyRecord, rev uint64) bool {
	k.Inbox.mu.Lock()
	if k.closed {
		k.Inbox.mu.Unlock()
		<-k.sem
		return false
	}
	k.active.Add(1)
	k.Inbox.mu.Unlock()
	k.mu.Lock()
	k.busy[name] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.busy, name)
			k.mu.Unlock()
			<-k.sem
			k.active.Done()
			k.wake()
		}()
		k.runHead(name, rec, rev)
	}()
	return true
}

// orderKeyOf returns the order key of a stored ordered delivery: its
// header's, or, stored before the header was written, OrderBy's.
func (k *keyRunner) orderKeyOf(h nats.Header, data []byte) string {
	if key := h.Get(hdrOrderKey); key != "" {
		return key
	}
	if k.opts.OrderBy == nil {
		return ""
	}
	return clipKey(k.opts.OrderBy(webhooks.Delivery{ID: h.Get(hdrDelivery), Name: h.Get(hdrEvent), Header: headerOf(h), Payload: data}))
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
		k.handle(msg)
		return
	}
	ctx, cancel := context.WithTimeout(k.handlerCtx, 30*time.Second)
	defer cancel()
	seq, name := meta.Sequence.Stream, keyName(key)
	if meta.NumDelivered > 1 {
		// Handed out again (an acknowledgement lost, a crash): it may have
		// run since, and its key's record gone with it, so that admitting
		// it again would run it after the later deliveries of its key. A
		// status that cannot be read is no proof that it did not run.
		st, err := k.readStatus(ctx, statusKey(h, tokenOf(h, msg.Subject()), seq))
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
	for range 100 {
		e, err := k.keyBucket.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			rec := keyRecord{Key: clipKey(key), Head: seq, Tail: seq, Due: time.Now(), Tenant: h.Get(hdrTenant)}
			// Run here at once when a place is free; else the scheduler of
			// whichever receiver has one takes it.
			placed := false
			select {
			case k.sem <- struct{}{}:
				placed = true
				rec.Owner, rec.Lease = k.id, time.Now().Add(k.opts.AckWait)
			default:
			}
			rev, err := k.keyBucket.Create(ctx, name, rec.marshal())
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
		var rec keyRecord
		if json.Unmarshal(e.Value(), &rec) != nil {
			k.log.Error("inbox: an order key's record is not JSON; dropped", "record", name)
			_ = k.keyBucket.Delete(ctx, name, jetstream.LastRevision(e.Revision()))
			continue
		}
		if seq <= rec.Tail {
			_ = msg.Ack() // admitted already, before a crash or a lost acknowledgement
			return
		}
		if !parked {
			// Parked first, named by the record second: a record never
			// names a delivery that is not parked.
			pm := &nats.Msg{Subject: k.parkedSubject(name), Header: nats.Header{hdrSeq: {strconv.FormatUint(seq, 10)}}}
			if _, err := k.js.PublishMsg(ctx, pm, jetstream.WithMsgID("park."+name+"."+strconv.FormatUint(seq, 10))); err != nil {
				k.admitFailed(msg, err)
				return
			}
			parked = true
		}
		rec.Tail = seq
		if _, err := k.keyBucket.Update(ctx, name, rec.marshal(), e.Revision()); err != nil {
			if isWrongRevision(err) {
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
	if !k.isClosed() {
		k.log.Warn("inbox: admitting an ordered delivery; its partition hands it out again", "subject", msg.Subject(), "error", err)
	}
	_ = msg.NakWithDelay(time.Second)
}

// errCodeWrongLastSequenceConstant is the server's "wrong last sequence"
// without the sequence found, which the client names no constant for.
const errCodeWrongLastSequenceConstant jetstream.ErrorCode = 10164

// isWrongRevision reports a conditional write that found another revision.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == errCodeWrongLastSequenceConstant) ||
		errors.Is(err, jetstream.ErrKeyExists)
}

// runHead runs the Head of a record claimed here and settles it: the next
// parked delivery becomes the Head (or the record goes) when it succeeded,
// is a dead letter, or was settled already; a failure with retries left
// gives the record back, due after its delay.
func (k *keyRunner) runHead(name string, rec keyRecord, rev uint64) {
	for {
		next := k.runOne(name, rec, rev)
		if next == nil {
			return
		}
		rec, rev = next.rec, next.rev
	}
}

// runOne runs the Head of a record claimed here and settles it (see
// runHead); it returns the record when this runner keeps it to run its next
// Head at once (no other key waits for a place), else nil.
func (k *keyRunner) runOne(name string, rec keyRecord, rev uint64) *keyEntry {
	ctx := k.handlerCtx
	head := rec.Head
	m, err := k.leaderMsg(ctx, k.inbox, head)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return k.advance(name, head) // aged out of the stream (MaxAge)
	}
	if err != nil {
		if !k.isClosed() {
			k.log.Warn("inbox: reading an ordered delivery", "seq", head, "error", err)
		}
		k.release(name, head, time.Now().Add(time.Second))
		return nil
	}
	h := m.Header
	if h == nil {
		h = nats.Header{}
	}
	token := tokenOf(h, m.Subject)
	key := statusKey(h, token, head)
	st, err := k.readStatus(ctx, key)
	if err != nil {
		// Not taken for none: the Head may have run already.
		k.statusUnread(key, err)
		k.release(name, head, time.Now().Add(time.Second))
		return nil
	}
	switch {
	case st != nil && st.Seq == head && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead):
		return k.advance(name, head) // ran before a crash, or set aside (Skip)
	case st != nil && st.Seq > head:
		return k.advance(name, head) // stored again (Replay): the later copy runs in its turn
	case st == nil:
		st = &status{}
	}
	st.Seq = head
	if reason := notADelivery(h, m.Data); reason != "" {
		k.log.Error("inbox: not a delivery; moved to the dead letters", "seq", head, "subject", m.Subject, "reason", reason)
		st.add(delivery.Attempt{Number: st.last() + 1, Start: time.Now(), Err: "inbox: not a delivery: " + reason})
		return k.buryHead(ctx, name, m.Data, h, token, key, st, "inbox: not a delivery: "+reason)
	}
	before := atoi(h.Get(hdrBefore))
	attempt := max(before, st.last()) + 1
	k.setRunning(key, true)
	if k.watchers.Active() {
		r := recordOf(h, nil, len(m.Data), head, st)
		r.Status = delivery.StatusRunning
		k.notify(r)
	}
	lease := &keyLease{k: k, name: name, head: head}
	start := time.Now()
	err = k.run(ctx, m.Data, h, attempt, lease.renew)
	dur := time.Since(start)
	k.setRunning(key, false)
	if errors.Is(err, emitter.ErrClosed) {
		k.release(name, head, time.Now())
		return nil
	}
	a := delivery.Attempt{Number: attempt, Start: start, Duration: dur}
	if err != nil {
		a.Err = describe(err)
		a.Final = final(err)
	}
	st.add(a)
	id := h.Get(hdrDelivery)
	tries := attempt - before
	var next *keyEntry
	switch {
	case err == nil:
		st.Status = delivery.StatusHandled
		// Written and waited for before the key goes on: without its
		// status it runs again, before anything later of its key.
		if perr := k.putStatus(ctx, key, st); perr != nil {
			k.release(name, head, time.Now().Add(statusRetryDelay))
			return nil
		}
		next = k.advance(name, head)
	case a.Final:
		k.log.Error("inbox: handlers failed with a final error; moved to the dead letters without a retry, the later deliveries of its key go on", "delivery", id, "event", h.Get(hdrEvent),
			"order_key", rec.Key, "attempts", attempt, "error", err)
		return k.buryHead(ctx, name, m.Data, h, token, key, st, a.Err)
	case tries <= len(k.opts.RetryDelays):
		st.Status = delivery.StatusRetrying
		_ = k.putStatus(ctx, key, st)
		delay := k.opts.RetryDelays[tries-1]
		k.log.Warn("inbox: handlers failed; retrying later, the later deliveries of its key wait", "delivery", id, "event", h.Get(hdrEvent),
			"order_key", rec.Key, "attempt", attempt, "retry_in", delay, "error", err)
		k.release(name, head, time.Now().Add(delay))
	default:
		k.log.Error("inbox: handlers failed on every attempt; moved to the dead letters", "delivery", id, "event", h.Get(hdrEvent), "attempts", attempt, "error", err)
		return k.buryHead(ctx, name, m.Data, h, token, key, st, a.Err)
	}
	k.changed(h, m.Data, head, st)
	return next
}

// buryHead makes the Head a dead letter and lets its key go on; when the dead
// letter cannot be written the Head is tried again a minute later.
func (k *keyRunner) buryHead(ctx context.Context, name string, data []byte, h nats.Header, token, key string, st *status, lastErr string) *keyEntry {
	if err := k.writeDead(ctx, data, h, token, key, st, lastErr); err != nil {
		k.log.Error("inbox: writing a dead letter failed; the delivery stays at the head of its key", "key", key, "error", err)
		k.release(name, st.Seq, time.Now().Add(time.Minute))
		return nil
	}
	return k.advance(name, st.Seq)
}

// update applies change to the record name while its Head is head,
// conditionally on its revision, reading it again on a conflict. change
// returns write false to leave the record as it is, keep false to delete
// it. It gives up (leaving the lease to run out) on other errors, and
// reports whether its change was written, with the record's new revision.
func (k *keyRunner) update(name string, head uint64, change func(*keyRecord) (keep, write bool)) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 100 {
		e, err := k.keyBucket.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return 0, false
		}
		if err != nil {
			if !k.isClosed() {
				k.log.Warn("inbox: reading an order key's record", "record", name, "error", err)
			}
			return 0, false
		}
		var rec keyRecord
		if json.Unmarshal(e.Value(), &rec) != nil || rec.Head != head {
			return 0, false // another receiver took it over
		}
		keep, write := change(&rec)
		if !write {
			return 0, false
		}
		var rev uint64
		if keep {
			rev, err = k.keyBucket.Update(ctx, name, rec.marshal(), e.Revision())
		} else {
			err = k.keyBucket.Delete(ctx, name, jetstream.LastRevision(e.Revision()))
		}
		if err == nil {
			return rev, true
		}
		if !isWrongRevision(err) {
			if !k.isClosed() {
				k.log.Warn("inbox: writing an order key's record", "record", name, "error", err)
			}
			return 0, false
		}
	}
	return 0, false
}

// release gives the record back, its Head due at due.
func (k *keyRunner) release(name string, head uint64, due time.Time) {
	_, _ = k.update(name, head, func(r *keyRecord) (bool, bool) {
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
func (k *keyRunner) advance(name string, head uint64) *keyEntry {
	var taken uint64 // the parked entry that became the Head
	var next keyRecord
	rev, written := k.update(name, head, func(r *keyRecord) (bool, bool) {
		taken = 0
		if r.Tail <= head {
			return false, true
		}
		seq, pseq, err := k.nextParked(name, head)
		if err != nil {
			if !k.isClosed() {
				k.log.Warn("inbox: reading the parked deliveries of a key", "record", name, "error", err)
			}
			return true, false
		}
		if seq == 0 {
			// The record names deliveries the stream lost: nothing to wait for.
			k.log.Error("inbox: an order key's record names parked deliveries that are gone; its key goes on", "order_key", r.Key, "head", head, "tail", r.Tail)
			return false, true
		}
		taken = pseq
		r.Head, r.Due, r.Owner, r.Lease = seq, time.Now(), "", time.Time{}
		if !k.waiting.Load() && !k.isClosed() {
			r.Owner, r.Lease = k.id, time.Now().Add(k.opts.AckWait)
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
	defer k.loops.Done()
	for {
		select {
		case <-k.closing:
			return
		case seq := <-k.drops:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = k.parked.DeleteMsg(ctx, seq)
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
	subj := k.parkedSubject(name)
	from := uint64(1)
	for {
		m, err := k.parked.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, 0, nil
		}
		if err != nil {
			return 0, 0, err
		}
		s, _ := strconv.ParseUint(m.Header.Get(hdrSeq), 10, 64)
		if s > head {
			return s, m.Sequence, nil
		}
		_ = k.parked.DeleteMsg(ctx, m.Sequence)
		from = m.Sequence + 1
	}
}

// keyLease renews the claim on a record while its Head runs.
type keyLease struct {
	k    *keyRunner
	name string
	head uint64
}

func (l *keyLease) renew() {
	_, _ = l.k.update(l.name, l.head, func(r *keyRecord) (bool, bool) {
		if r.Owner != l.k.id {
			return true, false // lost: another receiver runs it too (at least once)
		}
		r.Lease = time.Now().Add(l.k.opts.AckWait)
		return true, true
	})
}

// leaderMsg reads the message at seq of st; in a cluster from the stream's
// leader, since a direct read (AllowDirect) may be answered by a replica
// that does not hold it yet: an ordered delivery just stored would pass for
// one gone.
func (in *Inbox) leaderMsg(ctx context.Context, st jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	if in.ns != nil {
		return st.GetMsg(ctx, seq)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := json.Marshal(map[string]uint64{"seq": seq})
	resp, err := in.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+st.CachedInfo().Config.Name, req)
	if err != nil {
		return nil, err
	}
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("reading message %d: %w", seq, err)
	}
	switch {
	case r.Error != nil && r.Error.Code == 404:
		return nil, jetstream.ErrMsgNotFound
	case r.Error != nil:
		return nil, fmt.Errorf("reading message %d: %s", seq, r.Error.Description)
	case r.Message == nil:
		return nil, fmt.Errorf("reading message %d: an empty answer", seq)
	}
	out := &jetstream.RawStreamMsg{Subject: r.Message.Subject, Sequence: r.Message.Seq, Data: r.Message.Data, Time: r.Message.Time}
	if len(r.Message.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return nil, fmt.Errorf("reading message %d: %w", seq, err)
		}
	}
	return out, nil
}
