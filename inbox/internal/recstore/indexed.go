package recstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Indexed are records (see records) kept as messages of a stream of
// their own on a single subject, each holding its key, and found through an
// index in the process: the 64-bit FNV-1a hash of each key → the sequence of
// its latest record, 16 bytes a key where a bucket costs JetStream an index
// entry of about 110 bytes, kept in memory for every key. A record's age is
// the stream's (MaxAge); older records of a key stay on disk until they age
// out too.
//
// The index outlives the process in a file beside the store (the snapshot,
// see indexfile.go), written at Close, every minute and every
// snapshotEntries keys; Open reads it and then the records written after
// it, so that a crash costs a read of those only. Two keys with the same hash (about one chance in four million
// among three million keys) share an entry: the one written last wins, and the
// other reads as absent; a read always checks the key it finds.
type Indexed struct {
	stream  jetstream.Stream
	js      jetstream.JetStream
	subject string
	file    string
	log     *slog.Logger

	// A put holds apply shared from its publish until its sequence is in
	// the index (Put) or its write is under way (w): a snapshot takes it
	// exclusively to know that every record up to a sequence is
	// accounted for.
	apply sync.RWMutex
	w     *writes

	pendMu  sync.Mutex
	pending []*recordEntry // asynchronous puts not yet written
	// unapplied holds, by key, the asynchronous puts not yet in the index
	// (queued, or written and not yet acknowledged): a Get reads its own
	// writes.
	unapplied map[string]*recordEntry
	kick      chan struct{} // the first one queued
	writeMu   sync.Mutex    // one writePending at a time, in order

	stop chan struct{}
	done sync.WaitGroup

	mu      sync.Mutex
	idx     *seqIndex
	first   uint64    // the stream's first sequence when last looked
	covered uint64    // every record up to this sequence is in idx, unless rescan
	rescan  bool      // an asynchronous put's sequence is not known
	changed bool      // since the last snapshot
	saved   time.Time // the last snapshot
	since   int       // keys written since the last snapshot
	due     chan struct{}
}

// ErrClosed is the error of a write waited for that Close cut short.
var ErrClosed = errors.New("inbox: the record store is closed")

// The index is written every snapshotEvery if it changed, as soon as
// snapshotEntries keys were written since the last time, and right after
// an Open that read loadSnapshotEntries keys or more from the stream: a
// start, even after kills that cut every Close, reads at most about
// snapshotEntries keys, or what came since the run before it started.
// Written, the index costs 16 bytes a key.
const (
	snapshotEvery       = time.Minute
	snapshotEntries     = 50_000
	loadSnapshotEntries = 1_000
	maintainEvery       = 10 * time.Second
)

// OpenIndexed creates (or updates) the stream of cfg, whose single
// subject the records are written on, and loads its index from file and the
// stream.
func OpenIndexed(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, file string, keep bool, log *slog.Logger) (*Indexed, error) {
	st, err := CreateOrUpdateStream(ctx, js, cfg, keep)
	if err != nil {
		return nil, fmt.Errorf("inbox: creating stream %s: %w", cfg.Name, err)
	}
	r := &Indexed{
		stream: st, js: js, subject: cfg.Subjects[0], file: file, log: log,
		stop: make(chan struct{}), kick: make(chan struct{}, 1), saved: time.Now(),
		unapplied: make(map[string]*recordEntry), due: make(chan struct{}, 1),
	}
	// The directory is locked: a temporary file beside the index is what a
	// write cut short (a kill) left.
	if n, err := RemoveTemporary(file); err != nil {
		log.Warn("inbox: removing what an index write cut short left", "file", file, "error", err)
	} else if n > 0 {
		log.Info("inbox: removed what an index write cut short left", "file", file, "files", n)
	}
	if err := r.load(ctx); err != nil {
		return nil, fmt.Errorf("inbox: loading the index of stream %s: %w", cfg.Name, err)
	}
	if err := r.startWrites(js.Conn()); err != nil {
		return nil, err
	}
	r.done.Add(3)
	go r.watchWrites()
	go r.maintain()
	go r.writer()
	return r, nil
}

// keyHash is the 64-bit FNV-1a hash of key.
func keyHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// recordEntry is a value and the keys it is written under.
type recordEntry struct {
	keys  []string
	value []byte
	// done, for a PutWait, gets the outcome of the write once its
	// sequence is in the index (nil) or it failed (the entries of one
	// call share it, each sending once).
	done chan error
}

// settle tells the entries' waiters the outcome of their write.
func settle(entries []*recordEntry, err error) {
	for _, e := range entries {
		if e.done != nil {
			e.done <- err
		}
	}
}

// A record's data is its keys, separated by spaces, a newline, and its
// value: keys (tokens, digests in hex) never hold a space, a tab or a
// newline. A record of several entries (asynchronous puts written
// together) starts with a tab, separates the entries' keys with tabs, and
// gives each entry's value after the newline preceded by its length
// (uvarint).
func recordData(entries ...*recordEntry) []byte {
	n := 1
	for _, e := range entries {
		n += len(e.value) + binary.MaxVarintLen64 + 1
		for _, k := range e.keys {
			n += len(k) + 1
		}
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		if len(entries) > 1 {
			b = append(b, '\t')
		}
		for j, k := range e.keys {
			if j > 0 {
				b = append(b, ' ')
			}
			b = append(b, k...)
		}
	}
	b = append(b, '\n')
	if len(entries) == 1 {
		return append(b, entries[0].value...)
	}
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.value)))
		b = append(b, e.value...)
	}
	return b
}

// recordKeys calls fn with each key of a record's data; false when data is
// not a record.
func recordKeys(data []byte, fn func(key []byte)) bool {
	line, _, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return false
	}
	for k := range bytes.FieldsFuncSeq(line, func(r rune) bool { return r == ' ' || r == '\t' }) {
		fn(k)
	}
	return true
}

// recordValue returns the value of key in a record's data.
func recordValue(data []byte, key string) ([]byte, bool) {
	line, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, false
	}
	if len(line) == 0 || line[0] != '\t' {
		for k := range bytes.SplitSeq(line, []byte{' '}) {
			if string(k) == key {
				return rest, true
			}
		}
		return nil, false
	}
	for group := range bytes.SplitSeq(line[1:], []byte{'\t'}) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, false
		}
		value := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		for k := range bytes.SplitSeq(group, []byte{' '}) {
			if string(k) == key {
				return value, true
			}
		}
	}
	return nil, false
}

// validKey reports whether key can be a record's key.
func validKey(key string) bool {
	return key != "" && !strings.ContainsAny(key, " \t\n")
}

func (r *Indexed) set(hash, seq uint64) {
	r.mu.Lock()
	r.idx.set(hash, seq)
	r.changed = true
	r.since++
	due := r.since == snapshotEntries
	r.mu.Unlock()
	if due {
		select {
		case r.due <- struct{}{}:
		default:
		}
	}
}

func (r *Indexed) lookup(key string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idx.get(keyHash(key))
}

func (r *Indexed) Get(ctx context.Context, key string) ([]byte, error) {
	if v, ok := r.unappliedValue(key); ok {
		return v, nil
	}
	seq := r.lookup(key)
	if seq == 0 {
		return nil, jetstream.ErrKeyNotFound
	}
	m, err := r.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, jetstream.ErrKeyNotFound // aged out
	}
	if err != nil {
		return nil, err
	}
	v, ok := recordValue(m.Data, key)
	if !ok {
		return nil, jetstream.ErrKeyNotFound // another key with the same hash
	}
	return v, nil
}

func (r *Indexed) Put(ctx context.Context, key string, value []byte) error {
	if !validKey(key) {
		return fmt.Errorf("inbox: record key %q is empty or holds a space, tab or newline", key)
	}
	// The puts queued before this one are stored before it: the later
	// record of a key wins.
	r.pendMu.Lock()
	older := r.unapplied[key]
	r.pendMu.Unlock()
	r.writePending()
	r.apply.RLock()
	defer r.apply.RUnlock()
	ack, err := r.js.Publish(ctx, r.subject, recordData(&recordEntry{keys: []string{key}, value: value}))
	if err != nil {
		return err
	}
	r.set(keyHash(key), ack.Sequence)
	r.pendMu.Lock()
	if older != nil && r.unapplied[key] == older {
		delete(r.unapplied, key)
	}
	r.pendMu.Unlock()
	return nil
}

// PutWait queues the entry and writes what is queued at once (with the
// entries other callers queued meanwhile: one record for many), then waits
// for the store's acknowledgement.
func (r *Indexed) PutWait(ctx context.Context, value []byte, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	return r.putWait(ctx, &recordEntry{keys: keys, value: value})
}

// PutWaitEach queues the entries together and writes them as PutWait
// does: one record for all of them unless they pass batchMax or batchBytes
// with the entries queued before them.
func (r *Indexed) PutWaitEach(ctx context.Context, entries ...Entry) error {
	es := make([]*recordEntry, len(entries))
	backing := make([]recordEntry, len(entries))
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = e.Key
		backing[i] = recordEntry{keys: keys[i : i+1 : i+1], value: e.Value}
		es[i] = &backing[i]
	}
	return r.putWait(ctx, es...)
}

// putWait queues entries at once, writes what is queued and waits for the
// answer to each.
func (r *Indexed) putWait(ctx context.Context, entries ...*recordEntry) error {
	// One channel for the entries of a call: each gets one answer.
	done := make(chan error, len(entries))
	for _, e := range entries {
		for _, key := range e.keys {
			if !validKey(key) {
				return fmt.Errorf("inbox: record key %q is empty or holds a space, tab or newline", key)
			}
		}
		e.done = done
	}
	r.queue(entries...)
	r.writePending()
	var errs []error
	for range entries {
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// queue adds entries, one after the other, to the puts waiting to be
// written; it returns how many wait.
func (r *Indexed) queue(entries ...*recordEntry) int {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	for _, e := range entries {
		r.pending = append(r.pending, e)
		for _, k := range e.keys {
			r.unapplied[k] = e
		}
	}
	return len(r.pending)
}

// PutAsync queues the entry; the writer writes what is queued as one
// record a little later (batchDelay), or at once when batchMax entries
// wait: one stored message for many puts.
func (r *Indexed) PutAsync(value []byte, keys ...string) {
	for _, key := range keys {
		if !validKey(key) {
			r.log.Warn("inbox: a record key is empty or holds a space, tab or newline; not written", "key", key)
			return
		}
	}
	if len(keys) == 0 {
		return
	}
	n := r.queue(&recordEntry{keys: keys, value: value})
	switch {
	case n >= batchMax:
		r.writePending()
	case n == 1:
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// Asynchronous puts are written together: at most batchMax entries and
// batchBytes of values a record, batchDelay after the first.
const (
	batchMax   = 256
	batchBytes = 1 << 20
	batchDelay = time.Millisecond
)

// writer writes the queued puts batchDelay after the first, until Close.
func (r *Indexed) writer() {
	defer r.done.Done()
	t := time.NewTimer(batchDelay)
	t.Stop()
	for {
		select {
		case <-r.kick:
		case <-r.stop:
			return
		}
		t.Reset(batchDelay)
		select {
		case <-t.C:
		case <-r.stop:
			return
		}
		r.writePending()
	}
}

// writePending writes the queued puts, as few records as the bounds allow.
func (r *Indexed) writePending() {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for {
		r.pendMu.Lock()
		n, size := 0, 0
		for n < len(r.pending) && n < batchMax && (n == 0 || size+len(r.pending[n].value) <= batchBytes) {
			size += len(r.pending[n].value)
			n++
		}
		batch := r.pending[:n:n]
		r.pending = r.pending[n:]
		if len(r.pending) == 0 {
			r.pending = nil
		}
		r.pendMu.Unlock()
		if n == 0 {
			return
		}
		r.publishAsync(batch)
	}
}

// publishAsync writes entries as one record, whose answer applies it to
// the index (writes.go).
func (r *Indexed) publishAsync(entries []*recordEntry) {
	waited := false
	for _, e := range entries {
		waited = waited || e.done != nil
	}
	r.apply.RLock()
	wr, err := r.send(recordData(entries...), entries, waited)
	r.apply.RUnlock()
	if err != nil {
		// Not sent (the connection down): nothing was stored, but the
		// rescan costs little and assumes nothing.
		r.log.Warn("inbox: writing deliveries' records", "records", len(entries), "error", err)
		r.markRescan()
		r.applied(entries)
		settle(entries, err)
		return
	}
	if waited {
		// Someone waits for this answer: it is waited for here, writeMu
		// held, so that the puts waited for that come meanwhile are
		// written together after it (one record, one sync of the disk
		// with Fsync, for many).
		select {
		case <-wr.handled:
		case <-r.stop:
		}
	}
}

// applied drops entries from unapplied, unless a later put of their key
// took their place.
func (r *Indexed) applied(entries []*recordEntry) {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	for _, e := range entries {
		for _, k := range e.keys {
			if r.unapplied[k] == e {
				delete(r.unapplied, k)
			}
		}
	}
}

// unappliedValue returns the value of key's asynchronous put not yet in
// the index.
func (r *Indexed) unappliedValue(key string) ([]byte, bool) {
	r.pendMu.Lock()
	defer r.pendMu.Unlock()
	if e := r.unapplied[key]; e != nil {
		return e.value, true
	}
	return nil, false
}

// markRescan notes that a record was written whose sequence the index does
// not have: the records after covered are read again (catchUp).
func (r *Indexed) markRescan() {
	r.mu.Lock()
	r.rescan = true
	r.mu.Unlock()
}

// Has answers from the index alone: a key whose latest record aged out
// since the last look at the stream (maintain, every minute) still counts.
func (r *Indexed) Has(_ context.Context, key string) (bool, error) {
	if _, ok := r.unappliedValue(key); ok {
		return true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.idx.get(keyHash(key))
	return seq != 0 && seq >= r.first, nil
}

// Flush waits until every put made before it is in the index (or failed).
func (r *Indexed) Flush(ctx context.Context) error {
	r.writePending()
	r.apply.Lock()
	//lint:ignore SA2001 taking the lock waits for the puts holding it shared
	r.apply.Unlock()
	select {
	case <-r.w.sentSoFar():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maintain drops from the index the keys whose records aged out, and
// writes the snapshot now and then, until Close.
func (r *Indexed) maintain() {
	defer r.done.Done()
	t := time.NewTicker(maintainEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.due:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := r.catchUp(ctx); err != nil {
			r.log.Warn("inbox: reading records into the index", "error", err)
		}
		if err := r.prune(ctx); err != nil {
			r.log.Warn("inbox: dropping aged-out records from the index", "error", err)
		}
		r.mu.Lock()
		due := r.changed && (time.Since(r.saved) >= snapshotEvery || r.since >= snapshotEntries)
		r.mu.Unlock()
		if due {
			if err := r.snapshot(ctx); err != nil {
				r.log.Warn("inbox: writing the index", "file", r.file, "error", err)
			}
		}
		cancel()
	}
}

// prune drops the keys whose latest record is older than the stream's
// first.
func (r *Indexed) prune(ctx context.Context) error {
	info, err := r.stream.Info(ctx)
	if err != nil {
		return err
	}
	first := info.State.FirstSeq
	r.mu.Lock()
	defer r.mu.Unlock()
	if first <= r.first {
		return nil
	}
	r.idx.prune(first)
	r.first = first
	r.changed = true
	return nil
}

// catchUp reads the records after covered into the index when a put's
// sequence was lost (rescan).
func (r *Indexed) catchUp(ctx context.Context) error {
	r.mu.Lock()
	rescan, from := r.rescan, r.covered+1
	r.mu.Unlock()
	if !rescan {
		return nil
	}
	info, err := r.stream.Info(ctx)
	if err != nil {
		return err
	}
	from = max(from, info.State.FirstSeq)
	var read []hashSeq
	if info.State.Msgs > 0 && from <= info.State.LastSeq {
		if read, err = r.scan(ctx, from, info.State.LastSeq); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.idx.addAll(read)
	r.covered, r.rescan, r.changed = max(r.covered, info.State.LastSeq), false, true
	r.mu.Unlock()
	return nil
}

// Close writes the snapshot when the index changed, and stops.
func (r *Indexed) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Flush(ctx); err != nil {
		r.log.Warn("inbox: writing the last records", "error", err)
	}
	r.mu.Lock()
	changed := r.changed
	r.mu.Unlock()
	if changed {
		if err := r.catchUp(ctx); err != nil {
			r.log.Warn("inbox: reading records into the index", "error", err)
		}
		if err := r.snapshot(ctx); err != nil {
			r.log.Warn("inbox: writing the index; the next start reads the records again", "file", r.file, "error", err)
		}
	}
	close(r.stop)
	r.done.Wait()
}
