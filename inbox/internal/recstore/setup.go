package recstore

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

// minDuplicates is the shortest duplicate window JetStream takes (zero is
// its default of two minutes).
const minDuplicates = 100 * time.Millisecond

// recordStore names one of the inbox's record stores.
type recordStore struct {
	to     *Records
	bucket string
	desc   string
	ttl    time.Duration
}

// SetupOptions says which records Setup opens.
type SetupOptions struct {
	// Name is the inbox's Name: the stores are Name_STATUS and Name_SEEN.
	Name string
	// Dir is the embedded server's directory, where the indexes are kept;
	// "" for a cluster, where the records are key-value buckets.
	Dir string
	// Replicas of each bucket in a cluster.
	Replicas int
	// StatusTTL and SeenTTL are how long a status and a dedupe record are
	// kept.
	StatusTTL, SeenTTL time.Duration
	// KeepSettings opens the stores that exist as they are
	// (CreateOrUpdateStream's keep).
	KeepSettings bool
	Logger       *slog.Logger
}

// Setup creates, or opens, an inbox's stores of statuses and of dedupe
// records: buckets in a cluster, streams with an index in the embedded mode
// (importing the buckets an earlier version left in the store). The stores
// opened are returned with an error too, for the caller to close.
func Setup(ctx context.Context, js jetstream.JetStream, o SetupOptions) (status, seen Records, err error) {
	stores := []recordStore{
		{&status, o.Name + "_STATUS", "forgehooks: each delivery's status and attempts", o.StatusTTL},
		{&seen, o.Name + "_SEEN", "forgehooks: delivery ids and body digests, remembered for the duplicate window", o.SeenTTL},
	}
	if o.Dir != "" {
		err = setupIndexed(ctx, js, o, stores)
		return status, seen, err
	}
	for _, s := range stores {
		kv, err := CreateOrUpdateKeyValue(ctx, js, jetstream.KeyValueConfig{
			Bucket: s.bucket, Description: s.desc, TTL: s.ttl,
			Storage: jetstream.FileStorage, Replicas: o.Replicas,
		}, o.KeepSettings)
		if err != nil {
			return status, seen, fmt.Errorf("inbox: creating bucket %s: %w", s.bucket, err)
		}
		if s.to == &status {
			// Whether a delivery ran is read from the leader: a status
			// missing from a lagging replica would run it again, after the
			// later deliveries of its key. Dedupe reads may lag: the
			// stream's own duplicate window covers the moments after a
			// store.
			kv = LeaderReads(js.Conn(), kv)
		}
		*s.to = NewBucket(js, kv, s.bucket, o.Logger)
	}
	return status, seen, nil
}

// setupIndexedRecords opens the stores of the embedded mode, their indexes
// loaded at the same time.
func setupIndexed(ctx context.Context, js jetstream.JetStream, o SetupOptions, stores []recordStore) error {
	opened := make([]*Indexed, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			opened[i], errs[i] = OpenIndexed(ctx, js, jetstream.StreamConfig{
				Name:        s.bucket,
				Description: s.desc,
				Subjects:    []string{o.Name + ".rec." + strings.ToLower(strings.TrimPrefix(s.bucket, o.Name+"_"))},
				Retention:   jetstream.LimitsPolicy,
				MaxAge:      s.ttl,
				Storage:     jetstream.FileStorage,
				Replicas:    1,
				AllowDirect: true,
				// Records carry no message id, so a duplicate window would
				// only make each start reload the stream's last messages:
				// JetStream's shortest one.
				Duplicates: minDuplicates,
				// A limit per subject that is never reached makes JetStream
				// use blocks of 4 MiB, not 8: a lookup of an old record
				// loads its block into memory for a few seconds.
				MaxMsgsPerSubject: math.MaxInt64,
			}, filepath.Join(o.Dir, s.bucket+".index"), o.KeepSettings, o.Logger)
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
		if err := importBucket(ctx, js, s.bucket, opened[i], o.Logger); err != nil {
			return err
		}
	}
	return nil
}

// importBucket moves the values of bucket, a key-value bucket an earlier
// version kept, into r, and deletes the bucket. Their ages start again.
func importBucket(ctx context.Context, js jetstream.JetStream, bucket string, r *Indexed, log *slog.Logger) error {
	st, err := js.Stream(ctx, "KV_"+bucket)
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
	if err := r.Flush(ctx); err != nil {
		return fmt.Errorf("inbox: importing bucket %s: %w", bucket, err)
	}
	if err := js.DeleteStream(ctx, "KV_"+bucket); err != nil {
		return fmt.Errorf("inbox: deleting bucket %s once imported: %w", bucket, err)
	}
	log.Info("inbox: the records of an earlier version's bucket imported", "bucket", bucket, "records", n)
	return nil
}
