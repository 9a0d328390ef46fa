package inbox

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

var clusterN = flag.Int("inbox.cluster.n", 2000, "deliveries TestInboxClusterNodeRestart sends (the issue's full run: 10000); 300 under -race or -short unless set or FORGEHOOKS_LONG=1")

// freePorts returns n TCP ports on 127.0.0.1 free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
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
	return ports
}

// natsCluster is a JetStream cluster of nats-server nodes in this process,
// routed over 127.0.0.1.
type natsCluster struct {
	t     testing.TB
	opts  []*server.Options
	nodes []*server.Server
}

// shutdown stops every node.
func (c *natsCluster) shutdown() {
	for i := range c.nodes {
		c.stop(i)
	}
}

var shared struct {
	once sync.Once
	c    *natsCluster
	dir  string
}

// sharedCluster is a 3-node cluster started once for the tests that use it
// (each with an inbox Name of its own), stopped by TestMain: electing the
// leaders of a new cluster takes seconds. A test that stops a node starts
// it again before it returns.
func sharedCluster(t testing.TB) *natsCluster {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "inbox-cluster")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		shared.c = launchCluster(t, 3, dir)
	})
	if shared.c == nil {
		t.Fatal("the shared cluster did not start")
	}
	shared.c.t = t
	return shared.c
}

func stopSharedCluster() {
	if shared.c != nil {
		shared.c.shutdown()
		os.RemoveAll(shared.dir)
	}
}

// launchCluster starts n nodes storing in base.
func launchCluster(t testing.TB, n int, base string) *natsCluster {
	t.Helper()
	c := planCluster(t, n, base)
	for i := range n {
		c.start(i)
	}
	return c
}

// planCluster configures n nodes storing in base and starts none.
func planCluster(t testing.TB, n int, base string) *natsCluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var routes []*url.URL
	for i := range n {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	c := &natsCluster{t: t}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   filepath.Join(base, fmt.Sprintf("n%d", i+1)),
			Cluster:    server.ClusterOpts{Name: "forgehooks-test", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     routes,
			NoSigs:     true,
			NoLog:      true,
		})
		c.nodes = append(c.nodes, nil)
	}
	return c
}

func (c *natsCluster) start(i int) {
	o := *c.opts[i]
	ns, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	ns.Start()
	// Generous: a node started again restores every stream the shared
	// cluster holds, which on a loaded machine took more than 20 s.
	if !ns.ReadyForConnections(time.Minute) {
		// Not left running: it would hold the node's port and store for
		// the next start of the shared cluster.
		ns.Shutdown()
		ns.WaitForShutdown()
		c.t.Fatalf("node %d did not start", i+1)
	}
	c.nodes[i] = ns
}

func (c *natsCluster) stop(i int) {
	if ns := c.nodes[i]; ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		c.nodes[i] = nil
	}
}

func (c *natsCluster) urls() []string {
	var out []string
	for _, o := range c.opts {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return out
}

// openClusterInbox opens an Inbox on the cluster, retrying while the
// cluster elects its leaders.
func openClusterInbox(t testing.TB, urls []string, o Options) *Inbox {
	t.Helper()
	o.URLs = urls
	if o.Key == nil {
		o.Key = testKey
	}
	if o.Logger == nil {
		o.Logger = quiet(t)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		in, err := openStarted(ctx, o)
		cancel()
		if err == nil {
			t.Cleanup(func() { in.Close(context.Background()) })
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("opening an inbox on the cluster: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestInboxClusterNodeRestart: a 3-node JetStream cluster, two receivers
// (two middlewares over HTTP, each with an Inbox on the cluster, sharing the
// streams and the consumer), signed deliveries with 10 % duplicates sent
// across both while one node is stopped and restarted. Every delivery
// answered 2xx is handled at least once; every duplicate of an acknowledged
// delivery is answered 200 "duplicate"; no handler runs for a delivery with a
// bad signature.
func TestInboxClusterNodeRestart(t *testing.T) {
	n := scaled("inbox.cluster.n", *clusterN, 300)
	cl := sharedCluster(t)
	handled := sync.Map{} // id → *atomic.Int32
	var runs atomic.Int64
	// Receiver 1 is connected to n3, the node stopped below, so that it must
	// fail over while it receives; receiver 2 to n1.
	newReceiver := func(urls []string) (*Inbox, string) {
		wh := newWebhooks(t)
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			v, _ := handled.LoadOrStore(e.ID, new(atomic.Int32))
			v.(*atomic.Int32).Add(1)
			runs.Add(1)
			return nil
		})
		in := openClusterInbox(t, urls, Options{Name: "RESTART", Receiver: wh, AckWait: 5 * time.Second, Workers: 16, NATSOptions: []nats.Option{nats.DontRandomize()}})
		return in, receiver(t, wh, in).URL
	}
	u := cl.urls()
	in1, url1 := newReceiver([]string{u[2], u[0], u[1]})
	_, url2 := newReceiver(u)
	if got := in1.nc.ConnectedUrl(); got != u[2] {
		t.Fatalf("receiver 1 is connected to %s, want n3 (%s)", got, u[2])
	}
	recvURLs := []string{url1, url2}

	type sent struct {
		id     string
		code   int
		dupOf  bool // a resend of an id answered 2xx before
		badSig bool
	}
	var (
		mu      sync.Mutex
		results []sent
		acked   []string // ids answered 2xx, in order
	)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range work {
				s := sent{id: fmt.Sprintf("c-%06d", i)}
				secret := testSecret
				mu.Lock()
				switch {
				case i%10 == 9 && len(acked) > 0:
					s.id, s.dupOf = acked[rng.IntN(len(acked))], true
				case i%50 == 7:
					s.badSig, secret = true, "not-the-secret"
					s.id = fmt.Sprintf("bad-%06d", i)
				}
				mu.Unlock()
				target := recvURLs[rng.IntN(2)]
				code, body, err := post(t, client, target, "issues", s.id, payload(s.id), secret)
				if err != nil {
					code = 0
				}
				s.code = code
				mu.Lock()
				results = append(results, s)
				if code/100 == 2 && !s.dupOf && !s.badSig {
					acked = append(acked, s.id)
				}
				mu.Unlock()
				if s.dupOf && code/100 == 2 && (code != 200 || !strings.Contains(body, "duplicate")) {
					t.Errorf("a duplicate of acknowledged %s answered %d %q", s.id, code, body)
				}
			}
		}()
	}
	start := time.Now()
	for i := range n {
		switch i {
		case n * 3 / 10:
			cl.stop(2)
			t.Logf("node n3, receiver 1's server, stopped after %d deliveries", i)
		case n * 6 / 10:
			cl.start(2)
			t.Logf("node n3 restarted after %d deliveries", i)
		}
		work <- i
	}
	close(work)
	wg.Wait()
	sendTime := time.Since(start)

	codes := map[int]int{}
	var dups, dupsSuppressed, bad int
	for _, s := range results {
		codes[s.code]++
		if s.dupOf {
			dups++
			if s.code == 200 {
				dupsSuppressed++
			}
		}
		if s.badSig {
			bad++
			if s.code != 400 {
				t.Errorf("bad signature %s answered %d", s.id, s.code)
			}
		}
	}
	// Every acknowledged delivery is handled, within the time a lost
	// acknowledgement takes to come back (AckWait).
	deadline := time.Now().Add(2 * time.Minute)
	var missing []string
	for {
		missing = missing[:0]
		for _, id := range acked {
			if _, ok := handled.Load(id); !ok {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged deliveries never handled, e.g. %v", len(missing), len(acked), missing[:min(5, len(missing))])
	}
	var unacked503Handled, extraRuns int
	ackedSet := map[string]bool{}
	for _, id := range acked {
		ackedSet[id] = true
	}
	handled.Range(func(k, v any) bool {
		id := k.(string)
		if strings.HasPrefix(id, "bad-") {
			t.Errorf("a handler ran for %s, whose signature was bad", id)
		}
		if !ackedSet[id] {
			unacked503Handled++ // answered 503, stored all the same
		}
		extraRuns += int(v.(*atomic.Int32).Load()) - 1
		return true
	})
	t.Logf("%d deliveries sent in %v (%d duplicates, %d with a bad signature); answers %v; %d acknowledged, all handled; %d duplicates of acknowledged ones answered 200; %d handler runs (%d more than once: at-least-once); %d answered 503 but stored and handled",
		n, sendTime.Round(time.Millisecond), dups, bad, codes, len(acked), dupsSuppressed, runs.Load(), extraRuns, unacked503Handled)
	if codes[202] == 0 || dups == 0 {
		t.Errorf("the run proved nothing: answers %v", codes)
	}
}

// TestInboxStoreUnavailable: with the NATS server down, the middleware
// answers 503 (Retry-After) within its Timeout and runs no handler; once the
// server is back, deliveries are stored again.
func TestInboxStoreUnavailable(t *testing.T) {
	port := freePorts(t, 1)[0]
	o := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	cl := &natsCluster{t: t, opts: []*server.Options{o}, nodes: []*server.Server{nil}}
	cl.start(0)
	t.Cleanup(func() { cl.stop(0) })
	wh := newWebhooks(t)
	var ran atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { ran.Add(1); return nil })
	in := openClusterInbox(t, cl.urls(), Options{Receiver: wh, Replicas: 1})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in, Logger: quiet(t), Timeout: time.Second})
	srv := httptest.NewServer(mw)
	defer srv.Close()
	if code, body, _ := post(t, srv.Client(), srv.URL, "push", "up-1", payload("up-1"), testSecret); code != 202 {
		t.Fatalf("with the server up: %d %s", code, body)
	}
	waitFor(t, 10*time.Second, "up-1 handled", func() bool { return ran.Load() == 1 })
	cl.stop(0)
	start := time.Now()
	code, body, _ := post(t, srv.Client(), srv.URL, "push", "down-1", payload("down-1"), testSecret)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "store") {
		t.Errorf("with the server down: %d %s, want 503", code, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the 503 took %v", d)
	}
	cl.start(0)
	waitFor(t, 20*time.Second, "a delivery stored after the server came back", func() bool {
		code, _, _ := post(t, srv.Client(), srv.URL, "push", "back-1", payload("back-1"), testSecret)
		return code == 202 || code == 200
	})
	waitFor(t, 20*time.Second, "back-1 handled", func() bool { return ran.Load() >= 2 })
	time.Sleep(200 * time.Millisecond)
	if got, _ := in.Holds(context.Background(), "down-1"); got {
		t.Error("down-1 was answered 503 and stored all the same (a publish buffered while disconnected)")
	}
	// A query with the default options (3 replicas in a cluster) opens the
	// one-replica inbox as it is.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := Open(ctx, Options{URLs: cl.urls(), Key: testKey, Logger: quiet(t)})
	if err != nil {
		t.Fatalf("opening the inbox for a query: %v", err)
	}
	defer q.Close(ctx)
	if ok, err := q.Holds(ctx, "back-1"); !ok || err != nil {
		t.Errorf("Holds(back-1) = %v, %v", ok, err)
	}
}
