package inbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
)

const (
	// ensureAttempt bounds the first try of a step of Open in a cluster: a
	// request sent while the cluster has no meta leader (just started, or
	// its leader lost) gets no answer at all, and only a new try reaches
	// the leader once elected. Each try that gets no answer in its bound
	// gives the next one twice as long, up to ensureAttemptMax: a stream
	// created with replicas is answered once its own leader is elected,
	// which on a loaded machine takes longer than one publish.
	ensureAttempt    = 2 * time.Second
	ensureAttemptMax = 8 * time.Second
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
	})
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
	})
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
		StatusTTL: o.MaxAge, SeenTTL: o.DuplicateWindow, Logger: in.log})
	return err
}

// setupRunner creates or updates what the workers keep beside the inbox
// stream (runner.Setup).
func (in *Inbox) setupRunner(ctx context.Context) error {
	o := in.opts
	var err error
	in.keyBucket, in.parked, err = runner.Setup(ctx, in.js, o.Name, o.Replicas, o.MaxAge, in.ns == nil)
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
	})
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

// ensure runs op, a step of Open in a cluster that may be repeated (a
// stream's or a bucket's creation or update, a lookup), until it succeeds,
// fails with an error that waiting cannot cure, or ctx is done: a cluster
// just started, or one that lost a server, leaves requests unanswered (or
// answers "temporarily unavailable") while it elects its leaders. Each try
// is bounded, from ensureAttempt up. The error of a step that ctx cut short
// says how long it was tried, and why a cluster does not answer.
func (in *Inbox) ensure(ctx context.Context, op func(context.Context) error) error {
	began := time.Now()
	bound := ensureAttempt
	pause := 50 * time.Millisecond
	// noResponders: every try ended so far said that nothing subscribes to
	// the JetStream API (the one cut off by ctx's end says nothing).
	var noResponders error
	for tries := 1; ; tries++ {
		actx, cancel := context.WithTimeout(ctx, bound)
		err := op(actx)
		unanswered := actx.Err() != nil
		cancel()
		if err == nil || !transientPublishError(err) || in.isClosed() {
			return err
		}
		if unanswered {
			bound = min(2*bound, ensureAttemptMax)
		}
		switch {
		case ctx.Err() != nil && noResponders != nil:
			err = noResponders
		case errors.Is(err, nats.ErrNoResponders) && (tries == 1 || noResponders != nil):
			noResponders = err
		default:
			noResponders = nil
		}
		t := time.NewTimer(pause/2 + rand.N(pause))
		select {
		case <-ctx.Done():
			t.Stop()
			return &unansweredError{err: err, tries: tries, took: time.Since(began)}
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// unansweredError is the error of a step of Open that the cluster did not
// answer (or answered "unavailable") on any try within Open's context.
type unansweredError struct {
	err   error // the last try's
	tries int
	took  time.Duration
}

func (e *unansweredError) Error() string {
	why := "the NATS cluster did not answer in time; a leader being elected, or fewer servers up than the replicas?"
	if errors.Is(e.err, nats.ErrNoResponders) {
		// Nothing subscribes to the JetStream API.
		why = "no NATS server answers for JetStream; is it enabled, for this account?"
	}
	return fmt.Sprintf("%v (tried %d times in %v: %s)", e.err, e.tries, e.took.Round(time.Millisecond), why)
}

func (e *unansweredError) Unwrap() error { return e.err }
