package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

// testCluster is a JetStream cluster of nats-server nodes in this process,
// routed over 127.0.0.1.
type testCluster struct {
	t     *testing.T
	opts  []*server.Options
	nodes []*server.Server
}

// startTestCluster starts n nodes storing under t's temporary directory,
// stopped when the test ends.
func startTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range 2 * n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	var routes []*url.URL
	for i := range n {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[n+i]))})
	}
	base := t.TempDir()
	c := &testCluster{t: t, nodes: make([]*server.Server, n)}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: filepath.Join(base, fmt.Sprintf("n%d", i+1)),
			Cluster: server.ClusterOpts{Name: "forgehooks-ls", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  routes, NoSigs: true, NoLog: true,
		})
	}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *testCluster) start(i int) {
	o := *c.opts[i]
	ns, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		c.t.Fatalf("node %d did not start", i+1)
	}
	c.nodes[i] = ns
}

func (c *testCluster) stop(i int) {
	if ns := c.nodes[i]; ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		c.nodes[i] = nil
	}
}

func (c *testCluster) urls() string {
	var out []string
	for _, o := range c.opts {
		out = append(out, "nats://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)))
	}
	return strings.Join(out, ",")
}

// TestInboxLsClusterNodeRestart: deliveries stored in a 3-server cluster;
// a server is shut down and started again; then 'inbox ls --json --nats'
// lists every delivery, 5 times out of 5, as one valid JSON document. Then,
// with every server down, it fails with an exit status that says so and
// still prints valid JSON. FORGEHOOKS_LONG=1 stores 10,000 deliveries.
func TestInboxLsClusterNodeRestart(t *testing.T) {
	t.Parallel()
	n := 1200
	if longtest.Enabled() {
		n = 10000
	}
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key, err := inbox.ParseKey(testInboxKey)
	if err != nil {
		t.Fatal(err)
	}
	o := inbox.Options{URLs: strings.Split(c.urls(), ","), Key: key, Workers: 1, Logger: slog.New(slog.DiscardHandler)}
	// Open waits, within its context, while the new cluster elects its
	// leaders.
	octx, ocancel := context.WithTimeout(ctx, 3*time.Minute)
	in, err := inbox.Open(octx, o)
	ocancel()
	if err != nil {
		t.Fatalf("opening the inbox while the cluster elects its leaders: %v", err)
	}
	// Half the deliveries are stored with all three servers up, the other
	// half while the inbox stream's leader is down: started again, it has
	// to catch up while the listings run.
	store := func(from, to int) {
		ids := make(chan int)
		var wg sync.WaitGroup
		var failed sync.Map
		for range 16 {
			wg.Go(func() {
				for i := range ids {
					id := fmt.Sprintf("ls-%05d", i)
					body := fmt.Appendf(nil, `{"action":"opened","issue":{"number":%d},"repository":{"full_name":"o/r"}}`, i)
					if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: body, ReceivedAt: time.Now()}); err != nil {
						failed.Store(id, err)
					}
				}
			})
		}
		for i := from; i < to; i++ {
			ids <- i
		}
		close(ids)
		wg.Wait()
		failed.Range(func(k, v any) bool {
			t.Fatalf("storing %v: %v", k, v)
			return false
		})
	}
	store(0, n/2)
	victim := 0
	for i, ns := range c.nodes {
		if ns.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, inbox.DefaultName+"_INBOX") {
			victim = i
		}
	}
	c.stop(victim)
	store(n/2, n)
	in.Close(ctx)
	c.start(victim)
	t.Logf("%d deliveries stored; n%d, the stream's leader, shut down after %d and started again", n, victim+1, n/2)

	for try := range 5 {
		began := time.Now()
		code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--json", "--limit", "-1", "--nats", c.urls())
		var recs []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(out), &recs); err != nil {
			t.Fatalf("try %d: exit %d, output is not JSON (%v): %.300s...; stderr: %s", try+1, code, err, out, errOut)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			seen[r.ID] = true
		}
		if code != exitOK || len(seen) != n {
			t.Fatalf("try %d: exit %d, %d distinct deliveries listed of %d; stderr: %s", try+1, code, len(seen), n, errOut)
		}
		t.Logf("try %d: %d listed in %v", try+1, n, time.Since(began).Round(time.Millisecond))
	}

	if testing.Short() {
		return
	}
	// No server at all: a failure, said by the exit status, and valid JSON.
	for i := range c.nodes {
		c.stop(i)
	}
	code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--json", "--nats", c.urls())
	if code == exitOK {
		t.Fatalf("ls with the cluster down: exit 0: %s", out)
	}
	if out != "" && !json.Valid([]byte(out)) {
		t.Fatalf("ls with the cluster down: invalid JSON %q (stderr %s)", out, errOut)
	}
}

// failingStore lists pages of records and then fails.
type failingStore struct {
	inboxStore // nil: only List is called
	pages      int
}

func (s *failingStore) List(_ context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
	if s.pages == 0 {
		return nil, errors.New("nats: no responders available for request")
	}
	s.pages--
	hi := o.Before
	if hi == 0 {
		hi = 1 << 20
	}
	var out []delivery.Record
	for i := range o.Limit {
		out = append(out, delivery.Record{ID: fmt.Sprint("d", hi-1-uint64(i)), Seq: hi - 1 - uint64(i), Name: "issues", Status: delivery.StatusHandled})
	}
	return out, nil
}

// TestListInboxFailsWhole: a listing whose store fails after some pages
// prints a valid JSON document of what it read, and exits 1 saying so;
// the text form says so by its exit status too.
func TestListInboxFailsWhole(t *testing.T) {
	for _, tc := range []struct {
		pages int
		json  bool
	}{{0, true}, {2, true}, {2, false}} {
		var out, errOut syncBuffer
		c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
		fs := newFlagSet(c, "inbox", "", "")
		code := listInbox(context.Background(), fs, &out, &failingStore{pages: tc.pages}, delivery.ListOptions{}, -1, tc.json)
		if code != exitFailure || !strings.Contains(errOut.String(), "no responders") {
			t.Errorf("%d pages, json %v: exit %d, stderr %q; want %d and the error", tc.pages, tc.json, code, errOut.String(), exitFailure)
		}
		if !tc.json {
			continue
		}
		var recs []map[string]any
		if err := json.Unmarshal([]byte(out.String()), &recs); err != nil {
			t.Errorf("%d pages: not JSON (%v): %.200s", tc.pages, err, out.String())
		} else if len(recs) != tc.pages*listPage {
			t.Errorf("%d pages: %d records printed, want %d", tc.pages, len(recs), tc.pages*listPage)
		}
	}
}
