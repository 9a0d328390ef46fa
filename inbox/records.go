package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// records keeps the small values the inbox writes for each delivery, by key:
// its status (Name_STATUS) and its dedupe records (Name_SEEN). A cluster
// keeps them in key-value buckets, which its receivers share; the embedded
// mode in a stream of its own with an index in the process (indexedRecords),
// since a bucket costs an in-memory index entry per key in JetStream, which
// grew with the deliveries stored.
type records interface {
	// Get returns key's value; the error wraps jetstream.ErrKeyNotFound
	// when there is none (or it aged out).
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes key's value and returns once the store acknowledged it.
	Put(ctx context.Context, key string, value []byte) error
	// PutAsync writes value under each of keys (one record in the embedded
	// mode) without waiting for the store's answer; a failure is logged. A
	// Get soon after may not see it yet.
	PutAsync(value []byte, keys ...string)
	// Has reports whether key has a value, reading as little as it can.
	Has(ctx context.Context, key string) (bool, error)
	// Close keeps what must outlive the process; the connection is still
	// open when it is called.
	Close()
}

// bucketRecords are records in a JetStream key-value bucket.
type bucketRecords struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	subj string // "$KV.<bucket>.", the prefix of a key's subject
	log  *slog.Logger
}

func newBucketRecords(js jetstream.JetStream, kv jetstream.KeyValue, bucket string, log *slog.Logger) *bucketRecords {
	return &bucketRecords{kv: kv, js: js, subj: "$KV." + bucket + ".", log: log}
}

func (b *bucketRecords) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (b *bucketRecords) Put(ctx context.Context, key string, value []byte) error {
	_, err := b.kv.Put(ctx, key, value)
	return err
}

func (b *bucketRecords) PutAsync(value []byte, keys ...string) {
	for _, key := range keys {
		if _, err := b.js.PublishAsync(b.subj+key, value); err != nil {
			b.log.Warn("inbox: writing a delivery's record", "key", key, "error", err)
		}
	}
}

func (b *bucketRecords) Has(ctx context.Context, key string) (bool, error) {
	_, err := b.kv.Get(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case isKeyNotFound(err):
		return false, nil
	}
	return false, err
}

func (b *bucketRecords) Close() {}

// isKeyNotFound reports an error of Get that means "no value".
func isKeyNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound)
}

// recordStore names one of the inbox's record stores.
type recordStore struct {
	to     *records
	bucket string
	desc   string
	ttl    time.Duration
}

// setupRecords creates the statuses' and dedupe records' stores: buckets in
// a cluster, streams with an index in the embedded mode (importing the
// buckets an earlier version left in the store).
func (in *Inbox) setupRecords(ctx context.Context) error {
	o := in.opts
	stores := []recordStore{
		{&in.status, o.Name + "_STATUS", "forgehooks: each delivery's status and attempts", o.MaxAge},
		{&in.seen, o.Name + "_SEEN", "forgehooks: delivery ids and body digests, remembered for the duplicate window", o.DuplicateWindow},
	}
	if in.ns != nil {
		return in.setupIndexedRecords(ctx, stores)
	}
	for _, s := range stores {
		kv, err := in.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: s.bucket, Description: s.desc, TTL: s.ttl,
			Storage: jetstream.FileStorage, Replicas: o.Replicas,
		})
		if err != nil {
			return fmt.Errorf("inbox: creating bucket %s: %w", s.bucket, err)
		}
		*s.to = newBucketRecords(in.js, kv, s.bucket, in.log)
	}
	return nil
}

// setupIndexedRecords opens the stores of the embedded mode, their indexes
// loaded at the same time.
func (in *Inbox) setupIndexedRecords(ctx context.Context, stores []recordStore) error {
	o := in.opts
	opened := make([]*indexedRecords, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			opened[i], errs[i] = openIndexedRecords(ctx, in.js, jetstream.StreamConfig{
				Name:        s.bucket,
				Description: s.desc,
				Subjects:    []string{o.Name + ".rec." + strings.ToLower(strings.TrimPrefix(s.bucket, o.Name+"_"))},
				Retention:   jetstream.LimitsPolicy,
				MaxAge:      s.ttl,
				Storage:     jetstream.FileStorage,
				Replicas:    1,
				AllowDirect: true,
				// A limit per subject that is never reached makes JetStream
				// use blocks of 4 MiB, not 8: a lookup of an old record
				// loads its block into memory for a few seconds.
				MaxMsgsPerSubject: math.MaxInt64,
			}, filepath.Join(o.Dir, s.bucket+".index"), in.log)
		})
	}
	wg.Wait()
	for i, r := range opened {
		if r != nil {
			*stores[i].to = r
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, s := range stores {
		if err := in.importBucket(ctx, s.bucket, opened[i]); err != nil {
			return err
		}
	}
	return nil
}

// importBucket moves the values of bucket, a key-value bucket an earlier
// version kept, into r, and deletes the bucket. Their ages start again.
func (in *Inbox) importBucket(ctx context.Context, bucket string, r *indexedRecords) error {
	st, err := in.js.Stream(ctx, "KV_"+bucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inbox: reading bucket %s: %w", bucket, err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return fmt.Errorf("inbox: reading bucket %s: %w", bucket, err)
	}
	prefix := "$KV." + bucket + "."
	n := 0
	for {
		batch, err := cons.FetchNoWait(1024)
		if err != nil {
			return fmt.Errorf("inbox: reading bucket %s: %w", bucket, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			switch m.Headers().Get("KV-Operation") {
			case "DEL", "PURGE":
				continue
			}
			if key, ok := strings.CutPrefix(m.Subject(), prefix); ok {
				r.PutAsync(m.Data(), key)
				n++
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("inbox: reading bucket %s: %w", bucket, err)
		}
		if got == 0 {
			break
		}
	}
	if err := r.flush(ctx); err != nil {
		return fmt.Errorf("inbox: importing bucket %s: %w", bucket, err)
	}
	if err := in.js.DeleteStream(ctx, "KV_"+bucket); err != nil {
		return fmt.Errorf("inbox: deleting bucket %s once imported: %w", bucket, err)
	}
	in.log.Info("inbox: the records of an earlier version's bucket imported", "bucket", bucket, "records", n)
	return nil
}
