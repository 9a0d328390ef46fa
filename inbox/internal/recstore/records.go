// Package recstore is the inbox's record engine: small values by key (each
// delivery's status, its dedupe records), written to JetStream and read
// back by key. A cluster keeps them in key-value buckets (Bucket), which its
// receivers share; the embedded mode in a stream of its own with an index in
// the process (Indexed), since a bucket costs an in-memory index entry per
// key in JetStream, which grew with the deliveries stored.
//
// It knows nothing of deliveries: keys and values are the caller's.
package recstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Records keeps small values by key.
type Records interface {
	// Get returns key's value; the error wraps jetstream.ErrKeyNotFound
	// when there is none (or it aged out).
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes key's value and returns once the store acknowledged it.
	Put(ctx context.Context, key string, value []byte) error
	// PutWait writes value under each of keys (one record in the embedded
	// mode) and returns once the store acknowledged every write: from
	// then on the value outlives a crash of the process. Concurrent calls
	// share their writes (one record for many in the embedded mode).
	PutWait(ctx context.Context, value []byte, keys ...string) error
	// PutWaitEach is PutWait for values of their own: it writes each
	// entry's value under its key (together, one record in the embedded
	// mode) and returns once the store acknowledged every write; an error
	// means any of them may not have been written. The entries' keys
	// differ: which of two with one key is kept is not said.
	PutWaitEach(ctx context.Context, entries ...Entry) error
	// PutAsync writes value under each of keys (one record in the embedded
	// mode) without waiting for the store's answer; a failure is logged. A
	// Get soon after sees it; a crash before it is written loses it.
	PutAsync(value []byte, keys ...string)
	// Has reports whether key has a value, reading as little as it can.
	Has(ctx context.Context, key string) (bool, error)
	// Close keeps what must outlive the process; the connection is still
	// open when it is called.
	Close()
}

// Entry is a value and the key it is written under (Records.PutWaitEach).
type Entry struct {
	Key   string
	Value []byte
}

// AsyncAckWait bounds, in the embedded mode, the wait for the store's
// answer to a write not waited for (the connection's PublishAsync timeout
// must be at least this).
const AsyncAckWait = 30 * time.Second

// Bucket is Records in a JetStream key-value bucket.
type Bucket struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	subj string // "$KV.<bucket>.", the prefix of a key's subject
	log  *slog.Logger
}

// NewBucket returns the records of bucket, opened as kv.
func NewBucket(js jetstream.JetStream, kv jetstream.KeyValue, bucket string, log *slog.Logger) *Bucket {
	return &Bucket{kv: kv, js: js, subj: "$KV." + bucket + ".", log: log}
}

// Get implements Records.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// Put implements Records.
func (b *Bucket) Put(ctx context.Context, key string, value []byte) error {
	_, err := b.kv.Put(ctx, key, value)
	return err
}

// PutWait implements Records: the keys are written at the same time, each
// a request of its own acknowledged by the bucket's replicas (not through
// the connection's asynchronous publishes, whose bound the writes not
// waited for share).
func (b *Bucket) PutWait(ctx context.Context, value []byte, keys ...string) error {
	if len(keys) == 1 {
		return b.Put(ctx, keys[0], value)
	}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() { errs[i] = b.Put(ctx, key, value) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// PutWaitEach implements Records as PutWait does: each entry a request of
// its own, at the same time.
func (b *Bucket) PutWaitEach(ctx context.Context, entries ...Entry) error {
	if len(entries) == 1 {
		return b.Put(ctx, entries[0].Key, entries[0].Value)
	}
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Go(func() { errs[i] = b.Put(ctx, e.Key, e.Value) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// PutAsync implements Records.
func (b *Bucket) PutAsync(value []byte, keys ...string) {
	for _, key := range keys {
		if _, err := b.js.PublishAsync(b.subj+key, value); err != nil {
			b.log.Warn("inbox: writing a delivery's record", "key", key, "error", err)
		}
	}
}

// Has implements Records.
func (b *Bucket) Has(ctx context.Context, key string) (bool, error) {
	_, err := b.kv.Get(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case IsKeyNotFound(err):
		return false, nil
	}
	return false, err
}

// Close implements Records.
func (b *Bucket) Close() {}

// IsKeyNotFound reports an error of Get that means "no value".
func IsKeyNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound)
}
