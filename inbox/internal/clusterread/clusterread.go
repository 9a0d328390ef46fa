// Package clusterread holds the reads of a JetStream cluster, and the
// steps of opening an inbox there, that wait out what a cluster goes
// through (a node restarting, a leader elected, a replica catching up)
// instead of failing or reading a stale copy.
package clusterread

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Patience bounds how long a query waits out a cluster that lost a
// node or its leader (an election, a consumer placed on a server that is
// not current yet) before it fails.
const Patience = 30 * time.Second

// Retry runs op, a read that may be repeated, until it succeeds, fails
// with an error that says the thing is not there, or Patience (or
// ctx) ends: in a cluster a read fails while a node restarts or a leader is
// elected, and the same read an instant later succeeds. giveUp reports,
// after a failed attempt, that op must not be tried again (an embedded
// server, which has no election to wait out, or Close).
func Retry(ctx context.Context, giveUp func() bool, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, Patience)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil || giveUp() || errors.Is(err, jetstream.ErrMsgNotFound) ||
			errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		t := time.NewTimer(pause/2 + rand.N(pause))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// ErrReplicaBehind is the reason a read is tried again: its consumer's
// server holds a copy of the stream that is catching up.
var ErrReplicaBehind = errors.New("the server of the read is catching up with the stream's leader")

// ReplicaCurrent checks that host, the server of a consumer of st, is st's
// leader or a replica that is current: a consumer reads its server's copy
// of the stream, and a server restarted (or cut off) reads an older copy,
// whose missing messages a listing would silently leave out. The
// embedded server has no replicas; with replicas, a host not known is not
// taken for current.
func ReplicaCurrent(ctx context.Context, st jetstream.Stream, host string, embedded bool) error {
	if embedded {
		return nil
	}
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	ci := info.Cluster
	if ci == nil || len(ci.Replicas) == 0 || host != "" && ci.Leader == host {
		// A single server, or its leader.
		return nil
	}
	for _, p := range ci.Replicas {
		if p.Name == host && p.Current && !p.Offline {
			return nil
		}
	}
	return fmt.Errorf("%w (%s)", ErrReplicaBehind, host)
}

const (
	// ensureAttempt bounds the first try of a step of opening an inbox in
	// a cluster: a request sent while the cluster has no meta leader (just
	// started, or its leader lost) gets no answer at all, and only a new
	// try reaches the leader once elected. Each try that gets no answer in its bound
	// gives the next one twice as long, up to ensureAttemptMax: a stream
	// created with replicas is answered once its own leader is elected,
	// which on a loaded machine takes longer than one publish.
	ensureAttempt    = 2 * time.Second
	ensureAttemptMax = 8 * time.Second
)

// Ensure runs op, a step of opening an inbox in a cluster that may be
// repeated (a stream's or a bucket's creation or update, a lookup), until
// it succeeds, fails with an error that again says waiting cannot cure,
// or ctx is done: a cluster just started, or one that lost a server, leaves requests unanswered (or
// answers "temporarily unavailable") while it elects its leaders. Each try
// is bounded, from ensureAttempt up. The error of a step that ctx cut short
// says how long it was tried, and why a cluster does not answer.
func Ensure(ctx context.Context, op func(context.Context) error, again func(error) bool) error {
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
		if err == nil || !again(err) {
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
