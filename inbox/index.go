package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// indexedRecords are records (see records) kept as messages of a stream of
// their own on a single subject, each holding its key, and found through an
// index in the process: the 64-bit FNV-1a hash of each key → the sequence of
// its latest record, 16 bytes a key where a bucket costs JetStream an index
// entry of about 110 bytes, kept in memory for every key. A record's age is
// the stream's (MaxAge); older records of a key stay on disk until they age
// out too.
//
// The index outlives the process in a file beside the store (the snapshot,
// see indexfile.go), written at Close and every few minutes; Open reads it
// and then the records written after it, so that a crash costs a read of
// those only. Two keys with the same hash (about one chance in 10^7 with
// three million keys) share an entry: the one written last wins, and the
// other reads as absent; a read always checks the key it finds.
type indexedRecords struct {
	stream  jetstream.Stream
	js      jetstream.JetStream
	subject string
	file    string
	log     *slog.Logger

	// A put holds apply shared from its publish until its sequence is in
	// the index (Put) or queued for it (PutAsync): a snapshot takes it
	// exclusively to know that every record up to a sequence is
	// accounted for.
	apply sync.RWMutex
	acks  chan pendingAck
	stop  chan struct{}
	done  sync.WaitGroup

	mu      sync.Mutex
	idx     *seqIndex
	first   uint64    // the stream's first sequence when last looked
	covered uint64    // every record up to this sequence is in idx, unless rescan
	rescan  bool      // an asynchronous put's sequence is not known
	changed bool      // since the last snapshot
	saved   time.Time // the last snapshot
}

// pendingAck is an asynchronous put waiting for the store's answer, or a
// barrier: closed once every put queued before it is applied.
type pendingAck struct {
	hashes  []uint64
	ack     jetstream.PubAckFuture
	barrier chan struct{}
}

// Every snapshotEvery the index is written, if it changed; a crash costs
// Open a read of the records written since.
const snapshotEvery = 5 * time.Minute

// openIndexedRecords creates (or updates) the stream of cfg, whose single
// subject the records are written on, and loads its index from file and the
// stream.
func openIndexedRecords(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, file string, log *slog.Logger) (*indexedRecords, error) {
	st, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("inbox: creating stream %s: %w", cfg.Name, err)
	}
	r := &indexedRecords{
		stream: st, js: js, subject: cfg.Subjects[0], file: file, log: log,
		acks: make(chan pendingAck, 4096), stop: make(chan struct{}), saved: time.Now(),
	}
	if err := r.load(ctx); err != nil {
		return nil, fmt.Errorf("inbox: loading the index of stream %s: %w", cfg.Name, err)
	}
	r.done.Add(2)
	go r.applyAcks()
	go r.maintain()
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

// A record's data is its keys, separated by spaces, a newline, and its
// value: keys (tokens, digests in hex) never hold a space or a newline.
func recordData(keys []string, value []byte) []byte {
	n := len(value)
	for _, k := range keys {
		n += len(k) + 1
	}
	b := make([]byte, 0, n)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
	}
	b = append(b, '\n')
	return append(b, value...)
}

// splitRecord returns the keys and the value of a record's data.
func splitRecord(data []byte) (keys []byte, value []byte, ok bool) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return nil, nil, false
	}
	return data[:i], data[i+1:], true
}

// validKey reports whether key can be a record's key.
func validKey(key string) bool {
	return key != "" && !strings.ContainsAny(key, " \n")
}

// hasKey reports whether the keys of a record hold key.
func hasKey(keys []byte, key string) bool {
	for k := range bytes.SplitSeq(keys, []byte{' '}) {
		if string(k) == key {
			return true
		}
	}
	return false
}

func (r *indexedRecords) set(hash, seq uint64) {
	r.mu.Lock()
	r.idx.set(hash, seq)
	r.changed = true
	r.mu.Unlock()
}

func (r *indexedRecords) lookup(key string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idx.get(keyHash(key))
}

func (r *indexedRecords) Get(ctx context.Context, key string) ([]byte, error) {
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
	keys, v, ok := splitRecord(m.Data)
	if !ok || !hasKey(keys, key) {
		return nil, jetstream.ErrKeyNotFound // another key with the same hash
	}
	return v, nil
}

func (r *indexedRecords) Put(ctx context.Context, key string, value []byte) error {
	if !validKey(key) {
		return fmt.Errorf("inbox: record key %q is empty or holds a space or newline", key)
	}
	r.apply.RLock()
	defer r.apply.RUnlock()
	ack, err := r.js.Publish(ctx, r.subject, recordData([]string{key}, value))
	if err != nil {
		return err
	}
	r.set(keyHash(key), ack.Sequence)
	return nil
}

func (r *indexedRecords) PutAsync(value []byte, keys ...string) {
	hashes := make([]uint64, len(keys))
	for i, key := range keys {
		if !validKey(key) {
			r.log.Warn("inbox: a record key is empty or holds a space or newline; not written", "key", key)
			return
		}
		hashes[i] = keyHash(key)
	}
	if len(keys) == 0 {
		return
	}
	r.apply.RLock()
	defer r.apply.RUnlock()
	ack, err := r.js.PublishAsync(r.subject, recordData(keys, value))
	if err != nil {
		r.log.Warn("inbox: writing a delivery's record", "keys", keys, "error", err)
		return
	}
	select {
	case r.acks <- pendingAck{hashes: hashes, ack: ack}:
	default:
		// Not waited for: the record is read from the stream instead.
		r.markRescan()
	}
}

// markRescan notes that a record was written whose sequence the index does
// not have: the records after covered are read again (catchUp).
func (r *indexedRecords) markRescan() {
	r.mu.Lock()
	r.rescan = true
	r.mu.Unlock()
}

// Has answers from the index alone: a key whose latest record aged out
// since the last look at the stream (maintain, every minute) still counts.
func (r *indexedRecords) Has(_ context.Context, key string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.idx.get(keyHash(key))
	return seq != 0 && seq >= r.first, nil
}

// applyAcks puts the sequences of asynchronous puts in the index as the
// store acknowledges them, in the order they were written.
func (r *indexedRecords) applyAcks() {
	defer r.done.Done()
	for {
		var p pendingAck
		select {
		case p = <-r.acks:
		case <-r.stop:
			return
		}
		if p.barrier != nil {
			close(p.barrier)
			continue
		}
		select {
		case ack := <-p.ack.Ok():
			for _, h := range p.hashes {
				r.set(h, ack.Sequence)
			}
		case err := <-p.ack.Err():
			// Stored or not, its sequence is unknown: a timeout may hide
			// a record written.
			r.log.Warn("inbox: writing a delivery's record", "stream", r.stream.CachedInfo().Config.Name, "error", err)
			r.markRescan()
		case <-r.stop:
			return
		}
	}
}

// flush waits until every put made before it is in the index.
func (r *indexedRecords) flush(ctx context.Context) error {
	r.apply.Lock()
	//lint:ignore SA2001 taking the lock waits for the puts holding it shared
	r.apply.Unlock()
	b := make(chan struct{})
	select {
	case r.acks <- pendingAck{barrier: b}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maintain drops from the index the keys whose records aged out, and
// writes the snapshot now and then, until Close.
func (r *indexedRecords) maintain() {
	defer r.done.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := r.catchUp(ctx); err != nil {
			r.log.Warn("inbox: reading records into the index", "error", err)
		}
		if err := r.prune(ctx); err != nil {
			r.log.Warn("inbox: dropping aged-out records from the index", "error", err)
		}
		r.mu.Lock()
		due := r.changed && time.Since(r.saved) >= snapshotEvery
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
func (r *indexedRecords) prune(ctx context.Context) error {
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
func (r *indexedRecords) catchUp(ctx context.Context) error {
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
func (r *indexedRecords) Close() {
	r.mu.Lock()
	changed := r.changed
	r.mu.Unlock()
	if changed {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := r.catchUp(ctx); err != nil {
			r.log.Warn("inbox: reading records into the index", "error", err)
		}
		if err := r.snapshot(ctx); err != nil {
			r.log.Warn("inbox: writing the index; the next start reads the records again", "file", r.file, "error", err)
		}
		cancel()
	}
	close(r.stop)
	r.done.Wait()
}
