package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// orderTarget is the forward target of the ordered fleet tests: it notes
// when each delivery arrived and with which attempt number. The first
// arrival of an id in hold blocks until its request ends (its sender gone),
// so that a delivery is surely running in a process the test kills.
type orderTarget struct {
	mu       sync.Mutex
	arrivals map[string][]time.Time
	attempts map[string][]int
	hold     map[string]bool
	held     chan string // the held ids, as they arrive
	delay    time.Duration
}

func newOrderTarget(delay time.Duration, hold ...string) *orderTarget {
	t := &orderTarget{arrivals: map[string][]time.Time{}, attempts: map[string][]int{}, hold: map[string]bool{},
		held: make(chan string, len(hold)), delay: delay}
	for _, id := range hold {
		t.hold[id] = true
	}
	return t
}

func (f *orderTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	id := r.Header.Get(webhooks.HeaderDelivery)
	n, _ := strconv.Atoi(r.Header.Get(inbox.HeaderAttempt))
	f.mu.Lock()
	f.arrivals[id] = append(f.arrivals[id], time.Now())
	f.attempts[id] = append(f.attempts[id], n)
	hold := f.hold[id]
	delete(f.hold, id)
	f.mu.Unlock()
	if hold {
		f.held <- id
		<-r.Context().Done()
		return
	}
	time.Sleep(f.delay)
}

// first returns when id first arrived, and whether it did.
func (f *orderTarget) first(id string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.arrivals[id]
	if len(a) == 0 {
		return time.Time{}, false
	}
	return a[0], true
}

// orderedFleet is a split fleet with ordering on a 3-server cluster:
// ingest processes (serve --workers 0) and work processes, each its own
// process, all on the cluster's URLs.
type orderedFleet struct {
	t      *testing.T
	bin    string
	env    []string
	args   []string // the inbox flags both kinds take
	target *orderTarget
	hooks  []string // the ingest processes' webhook URLs

	mu       sync.Mutex
	accepted map[string]time.Time // id: when its 202 came
	keyOf    map[string]string    // id: its repository
	failed   int                  // posts not answered 202
}

// The load of the ordered fleet tests: deliveries of orderFleetKeys
// repositories, one every orderFleetGap, each taking orderFleetDelay at
// the target.
const (
	orderFleetKeys  = 12
	orderFleetGap   = 25 * time.Millisecond
	orderFleetDelay = 20 * time.Millisecond
)

const orderFleetSecret = "order-fleet-secret-0123456789"

// startOrderedFleet starts ingest ingest processes on the cluster at urls
// (comma-separated), forwarding to target; work processes start with
// startWork.
func startOrderedFleet(t *testing.T, urls string, ackWait time.Duration, ingest int, target *orderTarget) *orderedFleet {
	t.Helper()
	tsrv := httptest.NewServer(target)
	t.Cleanup(tsrv.Close)
	f := &orderedFleet{t: t, bin: serveBinary(t), target: target,
		env:      append(os.Environ(), secretEnv+"="+orderFleetSecret, testInboxKeyEnv),
		args:     []string{"--nats", urls, "--forward", tsrv.URL, "--ack-wait", ackWait.String(), "--order-by", "repository"},
		accepted: map[string]time.Time{}, keyOf: map[string]string{}}
	for range ingest {
		f.hooks = append(f.hooks, f.startIngest())
	}
	return f
}

// startIngest starts a serve --workers 0 and returns its webhook URL; the
// first may have to wait for the cluster to elect its leaders.
func (f *orderedFleet) startIngest() string {
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command(f.bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, f.args...)...)
		cmd.Env = f.env
		_, addr, err := launchProc(f.t, cmd, regexp.MustCompile(`url"?[=:]"?http://([^/"]+)/`))
		if err == nil {
			return "http://" + addr + webhooks.DefaultPath
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("serve did not start within a minute: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// startWork starts a work process, returned once it runs deliveries.
func (f *orderedFleet) startWork() *fleetProc {
	cmd := exec.Command(f.bin, append([]string{"work", "--workers", "2"}, f.args...)...)
	cmd.Env = f.env
	p, _ := startProc(f.t, cmd, regexp.MustCompile(`(running the inbox's deliveries)`))
	return p
}

// post sends the n-th delivery of repository repo to ingest process i and
// notes when it was accepted; it returns the delivery's id.
func (f *orderedFleet) post(i int, repo, id string) {
	body := []byte(fmt.Sprintf(`{"action":"opened","issue":{"number":1},"repository":{"id":%s},"id":%q}`, repo, id))
	sig, _ := signing.Sign(orderFleetSecret, body)
	r, _ := http.NewRequest(http.MethodPost, f.hooks[i%len(f.hooks)], bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, "issues")
	r.Header.Set(webhooks.HeaderDelivery, id)
	r.Header.Set(webhooks.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(r)
	at := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.failed++
		return
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		f.failed++
		return
	}
	f.accepted[id], f.keyOf[id] = at, repo
}

// load posts a delivery every gap, to repositories 1..keys in turn, until
// stop is closed; the ids are "<prefix>-<repo>-<n>", n counting from 1000
// so that they sort as posted.
func (f *orderedFleet) load(prefix string, keys int, gap time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		repo := strconv.Itoa(1 + n%keys)
		f.post(n, repo, fmt.Sprintf("%s-%s-%d", prefix, repo, 1000+n/keys))
	}
}

// waitAll waits until every accepted delivery arrived at the target.
func (f *orderedFleet) waitAll(bound time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		f.mu.Lock()
		var missing []string
		for id := range f.accepted {
			if _, ok := f.target.first(id); !ok {
				missing = append(missing, id)
			}
		}
		f.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(missing)
			f.t.Fatalf("%d accepted deliveries not forwarded within %v: %v", len(missing), bound, missing[:min(len(missing), 20)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// orderLatency is a delivery's time from acceptance to its first arrival
// at the target.
type orderLatency struct {
	id       string
	key      string
	accepted time.Time
	d        time.Duration
}

// latencies returns the latency of every accepted delivery, and checks
// that the deliveries of each key first arrived in the order posted.
func (f *orderedFleet) latencies() []orderLatency {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []orderLatency
	byKey := map[string][]orderLatency{}
	for id, at := range f.accepted {
		first, _ := f.target.first(id)
		l := orderLatency{id: id, key: f.keyOf[id], accepted: at, d: first.Sub(at)}
		out = append(out, l)
		byKey[l.key] = append(byKey[l.key], l)
	}
	for key, ls := range byKey {
		slices.SortFunc(ls, func(a, b orderLatency) int { return a.accepted.Compare(b.accepted) })
		for i := 1; i < len(ls); i++ {
			if ls[i].accepted.Add(ls[i].d).Before(ls[i-1].accepted.Add(ls[i-1].d)) {
				f.t.Errorf("repository %s: %s first arrived before %s, posted before it", key, ls[i].id, ls[i-1].id)
			}
		}
	}
	return out
}

// p99 returns the 99th percentile of the latencies ls, and the greatest.
func p99(ls []orderLatency) (p, worst time.Duration) {
	if len(ls) == 0 {
		return 0, 0
	}
	ds := make([]time.Duration, len(ls))
	for i, l := range ls {
		ds[i] = l.d
	}
	slices.Sort(ds)
	return ds[(len(ds)*99+99)/100-1], ds[len(ds)-1]
}

// logWindows logs the p99 of the deliveries accepted in each second around
// at, when event happened.
func logWindows(t *testing.T, ls []orderLatency, at time.Time, event string) {
	windows := map[int][]orderLatency{}
	for _, l := range ls {
		s := l.accepted.Sub(at)
		if s < 0 {
			s -= time.Second
		}
		windows[int(s/time.Second)] = append(windows[int(s/time.Second)], l)
	}
	for _, w := range slices.Sorted(maps.Keys(windows)) {
		p, worst := p99(windows[w])
		slow := map[string]bool{}
		for _, l := range windows[w] {
			if l.d > time.Second {
				slow[l.key] = true
			}
		}
		t.Logf("accepted %+3d s from %s: %4d deliveries, p99 %v (worst %v), repositories over 1 s: %d",
			w, event, len(windows[w]), p.Round(time.Millisecond), worst.Round(time.Millisecond), len(slow))
	}
}

// TestOrderedFleetWorkKilled: an ordered split fleet (2 serve --workers 0,
// 2 work) on a 3-server cluster, deliveries of 12 repositories posted
// steadily; one work is SIGKILLed while a delivery of repository 99 runs
// in it, its handler still waiting. Every delivery arrives, each
// repository's in the order posted; the killed work's keys go on within
// one lease (--ack-wait) plus a second: each repository's p99 (here its
// worst) acceptance→forward stays within AckWait + 1 s; and the delivery
// cut off by the kill runs again as attempt 2.
func TestOrderedFleetWorkKilled(t *testing.T) {
	t.Parallel()
	const ackWait = 3 * time.Second
	target := newOrderTarget(orderFleetDelay, "held-99-1000")
	f := startOrderedFleet(t, startTestCluster(t, 3).urls(), ackWait, 2, target)
	w1 := f.startWork()
	f.post(0, "99", "held-99-1000")
	select {
	case <-target.held:
	case <-time.After(time.Minute):
		t.Fatal("the held delivery never reached the target")
	}
	f.startWork()
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		f.load("d", orderFleetKeys, orderFleetGap, stop)
	}()
	time.Sleep(3 * time.Second) // the load runs on both works before the kill
	if err := w1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-w1.done
	for n := range 3 {
		f.post(n, "99", fmt.Sprintf("held-99-%d", 1001+n)) // behind the cut-off one
	}
	time.Sleep(4 * ackWait)
	close(stop)
	<-loaded
	f.waitAll(2 * time.Minute)

	var ls []orderLatency
	byKey := map[string][]orderLatency{}
	var after []orderLatency
	for _, l := range f.latencies() {
		if l.id == "held-99-1000" {
			continue // held on purpose until the kill
		}
		ls = append(ls, l)
		byKey[l.key] = append(byKey[l.key], l)
		if !l.accepted.Before(killed) {
			after = append(after, l)
		}
	}
	logWindows(t, ls, killed, "the kill")
	all, worstAll := p99(ls)
	pa, worstAfter := p99(after)
	t.Logf("%d deliveries (%d posts failed); p99 %v (worst %v); accepted after the kill: %d, p99 %v (worst %v)",
		len(ls), f.failed, all, worstAll, len(after), pa, worstAfter)
	// The bound with FORGEHOOKS_TIMING=1 (make timing); make test
	// allows two seconds more, for a loaded machine with a second suite
	// beside it (4.1 s was seen there), still far below the lease waits
	// and the 12–25 s lag this test stands against.
	bound := ackWait + 3*time.Second
	if os.Getenv("FORGEHOOKS_TIMING") != "" {
		bound = ackWait + time.Second
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		p, worst := p99(byKey[key])
		if p > bound {
			t.Errorf("repository %s: p99 acceptance→forward %v (worst %v), want at most %v", key, p, worst, bound)
		}
	}
	if f.failed > 0 {
		t.Errorf("%d posts were not answered 202", f.failed)
	}
	target.mu.Lock()
	got := target.attempts["held-99-1000"]
	target.mu.Unlock()
	if len(got) < 2 || !slices.IsSorted(got) || got[0] != 1 || slices.Compact(slices.Clone(got))[1] != 2 {
		t.Errorf("the delivery cut off by the kill arrived as attempts %v, want 1 then 2", got)
	}
}

// TestOrderedFleetLeaderLoss: an ordered split fleet (2 serve --workers 0,
// 2 work) on a cluster of 3 nats-server processes, deliveries of 12
// repositories posted steadily; the server leading the inbox stream is
// SIGKILLed (a shutdown would hand its leaderships over first). 15 s later
// the ordered p99 acceptance→forward is back under 2 s, and every
// delivery accepted arrives, each repository's in the order posted.
func TestOrderedFleetLeaderLoss(t *testing.T) {
	t.Parallel()
	longtest.Require(t, "runs a fleet for a minute through a leader election")
	target := newOrderTarget(orderFleetDelay)
	c := startNATSProcesses(t, 3)
	f := startOrderedFleet(t, c.urls(), 3*time.Second, 2, target)
	f.startWork()
	f.startWork()
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		f.load("l", orderFleetKeys, orderFleetGap, stop)
	}()
	time.Sleep(5 * time.Second)
	c.kill(c.streamLeader(inbox.DefaultName + "_INBOX"))
	lost := time.Now()
	time.Sleep(25 * time.Second)
	close(stop)
	<-loaded
	f.waitAll(2 * time.Minute)

	ls := f.latencies()
	windows := map[int][]orderLatency{}
	var late []orderLatency
	for _, l := range ls {
		if s := l.accepted.Sub(lost); s >= 0 {
			windows[int(s/(5*time.Second))] = append(windows[int(s/(5*time.Second))], l)
			if s >= 15*time.Second {
				late = append(late, l)
			}
		}
	}
	logWindows(t, ls, lost, "the leader's loss")
	p, worst := p99(late)
	t.Logf("%d posts were not answered 202", f.failed)
	if len(late) == 0 {
		t.Fatal("no delivery accepted 15 s after the leader's loss")
	}
	if p >= 2*time.Second {
		t.Errorf("15 s after the leader's loss: p99 acceptance→forward %v (worst %v), want under 2 s", p, worst)
	}
}

// TestOrderedFleetKeyDrain measures how fast a key's backlog drains, what
// sets how long a key stays behind after its lease ran out: 300 deliveries
// of one repository stored by serve --workers 0 on a 3-server cluster,
// then one work forwards them, in the order posted, at a rate it logs.
func TestOrderedFleetKeyDrain(t *testing.T) {
	t.Parallel()
	longtest.Require(t, "a measurement, of a key's backlog run by a work")
	const n = 300
	target := newOrderTarget(0)
	f := startOrderedFleet(t, startTestCluster(t, 3).urls(), 3*time.Second, 1, target)
	for i := range n {
		f.post(0, "7", fmt.Sprintf("k-7-%d", 1000+i))
	}
	if f.failed > 0 {
		t.Fatalf("%d posts were not answered 202", f.failed)
	}
	f.startWork()
	f.waitAll(2 * time.Minute)
	f.latencies() // checks the order
	var first, last time.Time
	target.mu.Lock()
	for _, a := range target.arrivals {
		if first.IsZero() || a[0].Before(first) {
			first = a[0]
		}
		if a[0].After(last) {
			last = a[0]
		}
	}
	target.mu.Unlock()
	d := last.Sub(first)
	t.Logf("one key's %d deliveries arrived over %v: %.0f/s", n, d.Round(time.Millisecond), (n-1)/d.Seconds())
}

// natsProcesses is a JetStream cluster of nats-server processes on
// 127.0.0.1, which a test can SIGKILL.
type natsProcesses struct {
	t     *testing.T
	procs []*fleetProc
	addrs []string // client addresses
}

// startNATSProcesses builds nats-server and starts a cluster of n of it,
// ready once a client reaches JetStream through each.
func startNATSProcesses(t *testing.T, n int) *natsProcesses {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server: %v\n%s", err, out)
	}
	var routes []string
	c := &natsProcesses{t: t}
	for range n {
		c.addrs = append(c.addrs, freeAddr(t))
		routes = append(routes, "nats://"+freeAddr(t))
	}
	for i := range n {
		host, port, _ := net.SplitHostPort(c.addrs[i])
		cmd := exec.Command(bin, "-js", "-a", host, "-p", port, "-n", fmt.Sprintf("n%d", i+1), "-sd", filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			"--cluster_name", "forgehooks-order", "--cluster", routes[i], "--routes", strings.Join(routes, ","))
		p, _ := startProc(t, cmd, regexp.MustCompile(`(Listening for client connections)`))
		c.procs = append(c.procs, p)
	}
	return c
}

func (c *natsProcesses) urls() string {
	var out []string
	for _, a := range c.addrs {
		out = append(out, "nats://"+a)
	}
	return strings.Join(out, ",")
}

// streamLeader returns the index of the server leading stream.
func (c *natsProcesses) streamLeader(stream string) int {
	c.t.Helper()
	nc, err := nats.Connect(c.urls())
	if err != nil {
		c.t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		c.t.Fatalf("stream %s: %v", stream, err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		c.t.Fatalf("stream %s has no leader", stream)
	}
	i, err := strconv.Atoi(strings.TrimPrefix(info.Cluster.Leader, "n"))
	if err != nil {
		c.t.Fatalf("stream %s: leader %q", stream, info.Cluster.Leader)
	}
	return i - 1
}

// kill SIGKILLs server i and waits for its end.
func (c *natsProcesses) kill(i int) {
	c.t.Helper()
	if err := c.procs[i].cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	<-c.procs[i].done
}
