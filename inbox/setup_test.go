package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestOpenWaitsOutElection: Open on a cluster that has no leader (one
// server of three up: no quorum) fails when its context ends, with an error
// that says the cluster did not answer and wraps the context's; started
// again with a generous context, it waits while the other two servers start
// and the cluster elects its leaders, and opens.
func TestOpenWaitsOutElection(t *testing.T) {
	t.Parallel()
	c := planCluster(t, 3, t.TempDir())
	t.Cleanup(c.shutdown)
	c.start(0)
	o := Options{URLs: c.urls(), Key: testKey, Logger: quiet(t)}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	began := time.Now()
	in, err := Open(ctx, o)
	cancel()
	if err == nil {
		in.Close(context.Background())
		t.Fatal("Open on one server of three: no error")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the NATS cluster did not answer in time") {
		t.Errorf("Open on one server of three: %v; want the context's error, saying the cluster did not answer", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("Open on one server of three returned after %v, its context ended after 3s", took)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		in  *Inbox
		err error
	}
	opened := make(chan result, 1)
	go func() {
		in, err := Open(ctx, o)
		opened <- result{in, err}
	}()
	// The others start once Open is connected and asking.
	for deadline := time.Now().Add(time.Minute); c.nodes[0].NumClients() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Open did not connect in a minute")
		}
	}
	c.start(1)
	c.start(2)
	r := <-opened
	if r.err != nil {
		t.Fatalf("Open while the cluster elects its leaders: %v", r.err)
	}
	defer r.in.Close(context.Background())
	if got := r.in.Replicas(); got != 3 {
		t.Errorf("replicas %d, want the cluster's 3", got)
	}
}

// TestOpenWithoutJetStream: a NATS server without JetStream fails Open
// when its context ends, saying that no server answers for JetStream.
func TestOpenWithoutJetStream(t *testing.T) {
	t.Parallel()
	port := freePorts(t, 1)[0]
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("the server did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	in, err := Open(ctx, Options{URLs: []string{fmt.Sprintf("nats://127.0.0.1:%d", port)}, Key: testKey, Logger: quiet(t)})
	if err == nil {
		in.Close(context.Background())
		t.Fatal("Open without JetStream: no error")
	}
	if !errors.Is(err, nats.ErrNoResponders) || !strings.Contains(err.Error(), "no NATS server answers for JetStream") {
		t.Errorf("Open without JetStream: %v; want no responders, saying JetStream does not answer", err)
	}
}
