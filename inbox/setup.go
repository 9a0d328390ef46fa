package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/clusterread"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
)

// setup creates or updates the streams, buckets and consumer. In a
// cluster each step is tried again until it is answered (ensure), so that a
// step waits out an election without the steps done before it being done
// again.
func (in *Inbox) setup(ctx context.Context) error {
	step := func(ctx context.Context, op func(context.Context) error) error { return op(ctx) }
	if in.ns == nil {
		step = in.ensure
	}
	for _, op := range []func(context.Context) error{in.setupStreams, in.setupRecords, in.setupRunner, in.setupState} {
		if err := step(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

// setupStreams creates or updates the streams of the deliveries and of the
// dead letters.
func (in *Inbox) setupStreams(ctx context.Context) error {
	o := in.opts
	var err error
	maxBytes := o.MaxStoreBytes
	switch {
	case maxBytes < 0:
		maxBytes = -1
	case in.ns != nil:
		maxBytes -= min(maxBytes/16, 32<<20)
	}
	dups := min(o.DuplicateWindow, jsDuplicates)
	in.inbox, err = recstore.CreateOrUpdateStream(ctx, in.js, jetstream.StreamConfig{
		Name:        o.Name + "_INBOX",
		Description: "forgehooks: webhook deliveries, stored before they are acknowledged",
		Subjects:    []string{in.inSubj + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      o.MaxAge,
		MaxBytes:    maxBytes,
		Discard:     jetstream.DiscardNew,
		Duplicates:  dups,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		AllowDirect: true,
	}, o.KeepSettings)
	if err != nil {
		return fmt.Errorf("inbox: creating stream %s_INBOX: %w", o.Name, err)
	}
	in.dead, err = recstore.CreateOrUpdateStream(ctx, in.js, jetstream.StreamConfig{
		Name:        o.Name + "_DEAD",
		Description: "forgehooks: deliveries whose handlers failed every attempt",
		Subjects:    []string{in.deadSubj + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      o.DeadRetention,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		AllowDirect: true,
	}, o.KeepSettings)
	if err != nil {
		return fmt.Errorf("inbox: creating stream %s_DEAD: %w", o.Name, err)
	}
	return nil
}

// setupRecords opens the stores of the statuses and the dedupe records.
func (in *Inbox) setupRecords(ctx context.Context) error {
	o := in.opts
	dir := ""
	if in.ns != nil {
		dir = o.Dir
	}
	var err error
	in.status, in.seen, err = recstore.Setup(ctx, in.js, recstore.SetupOptions{Name: o.Name, Dir: dir, Replicas: o.Replicas,
		StatusTTL: o.MaxAge, SeenTTL: o.DuplicateWindow, KeepSettings: o.KeepSettings, Logger: in.log})
	return err
}

// setupRunner creates or updates what the workers keep beside the inbox
// stream (runner.Setup).
func (in *Inbox) setupRunner(ctx context.Context) error {
	o := in.opts
	var err error
	in.keyBucket, in.parked, err = runner.Setup(ctx, in.js, o.Name, o.Replicas, o.MaxAge, in.ns == nil, o.KeepSettings)
	return err
}

// setupState creates or updates the bucket of the application's values.
func (in *Inbox) setupState(ctx context.Context) error {
	o := in.opts
	var err error
	in.state, err = recstore.CreateOrUpdateKeyValue(ctx, in.js, jetstream.KeyValueConfig{
		Bucket:      o.Name + "_STATE",
		Description: "forgehooks: small values kept for the application (catch-up checkpoints)",
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	}, o.KeepSettings)
	if err != nil {
		return fmt.Errorf("inbox: creating bucket %s_STATE: %w", o.Name, err)
	}
	return nil
}

// chooseReplicas sets the replicas of an Inbox in a cluster whose Options
// leave them to Open: those of the inbox stream when it exists (a query from
// the command line must not try to move a one-node inbox to three), else
// the cluster's servers (clusterReplicas). A lookup the cluster does not
// answer within ctx fails Open; one refused (permissions) leaves the
// choice to the cluster's size, and setup then says what the servers
// refuse.
func (in *Inbox) chooseReplicas(ctx context.Context) error {
	in.opts.Replicas = clusterReplicas(in.nc)
	name := in.opts.Name + "_INBOX"
	err := in.ensure(ctx, func(ctx context.Context) error {
		st, err := in.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("inbox: reading the replicas of stream %s: %w", name, err)
		}
		in.opts.Replicas = st.CachedInfo().Config.Replicas
		return nil
	})
	if err != nil && transientPublishError(err) {
		return err
	}
	return nil
}

// ensure runs op, a step of Open in a cluster, as clusterread.Ensure does,
// until Close.
func (in *Inbox) ensure(ctx context.Context, op func(context.Context) error) error {
	return clusterread.Ensure(ctx, op, func(err error) bool { return transientPublishError(err) && !in.isClosed() })
}
