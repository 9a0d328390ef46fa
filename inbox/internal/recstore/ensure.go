package recstore

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// CreateOrUpdateStream creates the stream of cfg, or updates the stream of
// that name to cfg (keep: opens it as it is, whatever cfg says, for a
// process that queries an inbox others run with their own settings), as jetstream's CreateOrUpdateStream does, but sends no
// update to a stream that has cfg already where the server can tell: it asks
// for a create first, which the server answers with the stream when the
// configurations are the same, and updates the stream when the create is
// refused and the stream exists (another configuration, or a create the
// server refuses for its limits, counting the stream's reserved bytes
// twice).
//
// Each process that opens an inbox opens every stream; an update, even to
// the same configuration, races in nats-server (v2.15.2:
// fileStore.UpdateConfig writes the configuration that a consumer being
// created on the stream reads unlocked in fileStore.ConsumerStore).
func CreateOrUpdateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, keep bool) (jetstream.Stream, error) {
	if keep {
		if st, err := js.Stream(ctx, cfg.Name); err == nil {
			return st, nil
		}
	}
	st, err := js.CreateStream(ctx, cfg)
	if err == nil {
		return st, nil
	}
	if _, serr := js.Stream(ctx, cfg.Name); serr != nil {
		return nil, err
	}
	return js.UpdateStream(ctx, cfg)
}

// CreateOrUpdateKeyValue creates the bucket of cfg, or updates it to cfg
// (keep: opens it as it is), as jetstream's CreateOrUpdateKeyValue does, with no update sent to a
// bucket that has cfg already (see CreateOrUpdateStream).
func CreateOrUpdateKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, keep bool) (jetstream.KeyValue, error) {
	if keep {
		if kv, err := js.KeyValue(ctx, cfg.Bucket); err == nil {
			return kv, nil
		}
	}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketExists) {
		if _, serr := js.Stream(ctx, "KV_"+cfg.Bucket); serr != nil {
			return nil, err
		}
	}
	return js.UpdateKeyValue(ctx, cfg)
}
