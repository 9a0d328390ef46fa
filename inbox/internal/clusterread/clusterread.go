// Package clusterread holds the reads of a JetStream cluster that wait out
// what a cluster goes through (a node restarting, a leader elected, a
// replica catching up) instead of failing or reading a stale copy.
package clusterread

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

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
