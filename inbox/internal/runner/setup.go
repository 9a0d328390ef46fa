package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/recstore"
)

// parkedDuplicates is the duplicate window of the parked deliveries: a park
// written again after its answer was lost is stored once.
const parkedDuplicates = 2 * time.Minute

// Setup creates, or updates, what the runners of the inbox named name keep
// beside the inbox stream: the bucket of the order keys' records
// (name_KEYS) and the stream of the parked deliveries (name_PARKED), with
// replicas, the parked ones kept up to maxAge (keep: those that exist are
// opened as they are, recstore.CreateOrUpdateStream). cluster makes the bucket's
// reads go to its leader (recstore.LeaderReads): a runner must see at once what
// another wrote.
func Setup(ctx context.Context, js jetstream.JetStream, name string, replicas int, maxAge time.Duration, cluster, keep bool) (keys jetstream.KeyValue, parked jetstream.Stream, err error) {
	keys, err = recstore.CreateOrUpdateKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      name + "_KEYS",
		Description: "forgehooks: the order keys with a delivery running or waiting",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}, keep)
	if err != nil {
		return nil, nil, fmt.Errorf("inbox: creating bucket %s_KEYS: %w", name, err)
	}
	if cluster {
		keys = recstore.LeaderReads(js.Conn(), keys)
	}
	// No direct reads from replicas: a runner must see a parked delivery
	// as soon as the record naming it is written.
	parked, err = recstore.CreateOrUpdateStream(ctx, js, jetstream.StreamConfig{
		Name:        name + "_PARKED",
		Description: "forgehooks: ordered deliveries waiting for the one before them of their key",
		Subjects:    []string{name + ".parked.>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      maxAge,
		Duplicates:  parkedDuplicates,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}, keep)
	if err != nil {
		return nil, nil, fmt.Errorf("inbox: creating stream %s_PARKED: %w", name, err)
	}
	return keys, parked, nil
}
