package recstore

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// CreateOrUpdateStream creates the stream of cfg, or updates the stream of
// that name to cfg, as jetstream's CreateOrUpdateStream does, but sends no
// update to a stream that has cfg already: it asks for a create first, which
// the server answers with the stream when the configurations are the same,
// and updates only when the server refuses it (another configuration).
//
// Each process that opens an inbox opens every stream; an update, even to
// the same configuration, races in nats-server (v2.15.2:
// fileStore.UpdateConfig writes the configuration that a consumer being
// created on the stream reads unlocked in fileStore.ConsumerStore).
func CreateOrUpdateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return js.UpdateStream(ctx, cfg)
	}
	return st, err
}

// CreateOrUpdateKeyValue creates the bucket of cfg, or updates it to cfg,
// as jetstream's CreateOrUpdateKeyValue does, with no update sent to a
// bucket that has cfg already (see CreateOrUpdateStream).
func CreateOrUpdateKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.UpdateKeyValue(ctx, cfg)
	}
	return kv, err
}
