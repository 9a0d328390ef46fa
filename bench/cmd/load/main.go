// Command load drives webhook receivers over 127.0.0.1 with signed deliveries
// and reports requests per second, latency percentiles and the server
// process's CPU time per request, read from /proc/<pid>/stat before and after.
//
// Each receiver runs as a process of its own, with GOMAXPROCS=1 (one core):
// `forgehooks serve` itself, and servers this command starts from its own
// binary (-serve): net/http alone (reads the body, checks nothing), a bare one
// that only verifies the HMAC and scans for the action, the forgehooks
// middleware with a raw handler, with a typed push handler, and with a typed
// handler for every event (typed-all, as a bot registering many), and go-github's
// ValidatePayload and ParseWebHook; and, under node, the Node.js library
// forgehooks descends from (@octokit/webhooks, see node.go and
// bench/node/server.mjs), left out with a message when node or npm is missing.
// Every one gets the same payload (the corpus's median push by default), with
// the headers it reads, and must answer 200. The requests go over -c
// keep-alive connections, each written as one buffer made ahead (see conn), so
// that the load generator is not what sets the pace.
// With -pin (the default) every receiver runs on the last CPU and the load
// generator on the others (see pin.go), so that neither takes the other's core.
//
//	load -forgehooks ./forgehooks -n 20000 -c 4 -duration 20s
//
// The peer configuration of issue 46 (make bench-load runs it second, into
// the README's load-peer section):
//
//	load -servers nethttp,bare,raw,typed-all,go-github,node -c 16 -duration 10s -n 1000000 -rounds 3 -section load-peer
//
// The durable path of issue 43 (make bench-inbox): the JetStream floor
// (jsfloor: verify, publish to an embedded file stream, answer after the
// store's ack, a consumer that fetches and acks; see jsfloor.go), `forgehooks
// serve`, `forgehooks serve --inbox` (serve-inbox, a fresh inbox each time)
// and the inbox in this command's process (inbox, for -cpuprofile), every
// request with a body of its own (-unique: the inbox's replay guard answers
// a body seen before under another id as a duplicate); -baseline adds an
// earlier binary's serve and serve --inbox rows to the same rounds:
//
//	load -forgehooks ./forgehooks -baseline ./forgehooks.old -servers jsfloor,serve,serve-base,serve-inbox,serve-inbox-base,inbox -unique -c 64 -duration 5s -n 10000000 -rounds 3
//
// The run is bounded by -n requests and -duration per receiver, whichever comes
// first, and only connects to 127.0.0.1.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"forgehooks.dev/forgehooks/bench"
)

func main() {
	serve := flag.String("serve", "", "run a receiver instead: nethttp, bare, raw, typed, typed-all or go-github (used by the load run itself)")
	addr := flag.String("addr", "127.0.0.1:0", "with -serve: the address to listen on (127.0.0.1 only)")
	forgehooks := flag.String("forgehooks", "", "path of the forgehooks binary, for the `forgehooks serve` row (empty: left out)")
	baseline := flag.String("baseline", "", "path of another forgehooks binary (an earlier build), for the rows serve-base and serve-inbox-base: before and after in one run")
	servers := flag.String("servers", "nethttp,bare,raw,typed,go-github,node,serve", "receivers to drive, in order")
	nodeScript := flag.String("node-script", "node/server.mjs", "the Node.js receiver's script, for the node row")
	octokitVersion := flag.String("octokit-webhooks", octokitWebhooksVersion, "version of @octokit/webhooks the node row installs and runs")
	n := flag.Int("n", 20000, "requests per receiver (at most)")
	c := flag.Int("c", 4, "concurrent connections")
	duration := flag.Duration("duration", 20*time.Second, "time per receiver (at most)")
	warmup := flag.Int("warmup", 1000, "requests before measuring")
	payload := flag.String("payload", "", "payload file (default: the corpus's median push)")
	event := flag.String("event", "push", "event name of the payload")
	readme := flag.String("readme", "", "README whose section (-section) to replace with the table")
	section := flag.String("section", "load", "with -readme: the name of the section between <!-- NAME:begin --> and <!-- NAME:end -->")
	rounds := flag.Int("rounds", 1, "times to run every receiver, one after another; the table gives the medians")
	pinCPUs := flag.Bool("pin", true, "pin every receiver to the last CPU and the load generator to the others (with taskset; left off with one CPU or without taskset)")
	unique := flag.Bool("unique", false, "give every request a body of its own (a first member naming it), signed anew: for the durable receivers, whose replay guard refuses a body seen before under another id")
	records := flag.Bool("records", false, "after each serve-inbox row, print the messages each stream of its store holds (the deliveries, their status and dedupe records) to stderr")
	cpuprofile := flag.String("cpuprofile", "", "with -serve: write a CPU profile here (NAME.prof) when stopped by SIGINT or SIGTERM, and beside it an allocation profile (NAME.allocs.prof) and the collector's and allocation's counts per request (NAME.gc.txt); otherwise: a directory for the profiles of each receiver this command starts")
	flag.Parse()

	if *serve != "" {
		if err := runServer(*serve, *addr, *cpuprofile); err != nil {
			fail(err)
		}
		return
	}
	if *pinCPUs {
		if why := pin(); why != "" {
			fmt.Fprintf(os.Stderr, "load: receivers not pinned: %s\n", why)
		}
	}
	profileDir = *cpuprofile
	countRecords = *records
	body, name, err := loadPayload(*payload)
	if err != nil {
		fail(err)
	}
	d := &bench.Delivery{Event: *event, Body: body, Signature: bench.Sign(body)}
	cfg := config{n: *n, c: *c, duration: *duration, warmup: *warmup, unique: *unique}
	var list []string
	for _, s := range strings.Split(*servers, ",") {
		switch s = strings.TrimSpace(s); {
		case (s == "serve" || s == "serve-inbox") && *forgehooks == "":
		case (s == "serve-base" || s == "serve-inbox-base") && *baseline == "":
		case s == "node":
			if nodeRecv = setupNode(*nodeScript, *octokitVersion); nodeRecv.skipped != "" {
				fmt.Fprintf(os.Stderr, "load: skipping the Node.js receiver: %s\n", nodeRecv.skipped)
				continue
			}
			labels["node"] = nodeRecv.label
			list = append(list, s)
		default:
			list = append(list, s)
		}
	}
	results := map[string][]result{}
	var order []string
	for r := 0; r < *rounds; r++ {
		for _, s := range list {
			kind, bin := s, *forgehooks
			if k, ok := strings.CutSuffix(s, "-base"); ok {
				kind, bin = k, *baseline
			}
			res, err := drive(kind, bin, d, cfg)
			if err != nil {
				fail(fmt.Errorf("%s: %w", s, err))
			}
			if _, ok := results[s]; !ok {
				order = append(order, s)
			}
			results[s] = append(results[s], res)
			fmt.Fprintf(os.Stderr, "round %d %-10s %8.0f req/s  p50 %6.0f µs  p99 %6.0f µs  server CPU %5.1f µs/req (user %5.1f)  sleeps %.2f/req  (%d requests)\n",
				r+1, s, res.rps, res.p50, res.p99, res.cpu, res.user, res.sleeps, res.n)
		}
	}
	table := render(order, results, name, len(body), cfg, *rounds, nodeRecv)
	fmt.Print(table)
	if *readme != "" {
		if err := replaceSection(*readme, *section, table); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(1)
}

func loadPayload(path string) ([]byte, string, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		return b, filepath.Base(path), err
	}
	all, err := bench.LoadCorpus(bench.CorpusDir)
	if err != nil {
		return nil, "", err
	}
	d, err := bench.MedianPush(all)
	return d.Body, d.Path, err
}

// profileDir, when set, is where each receiver started with -serve (and node)
// writes its CPU profile.
var profileDir string

// countRecords: -records.
var countRecords bool

// nodeRecv is the Node.js receiver, when the node row was asked for.
var nodeRecv *nodeReceiver

// headerNames are the names under which a receiver reads a delivery's event,
// delivery id and signature.
type headerNames struct{ event, delivery, signature string }

var (
	// forgeHeaders are ours: forgehooks' middleware, serve, and the baselines.
	forgeHeaders = headerNames{"X-Forge-Event", "X-Forge-Delivery", "X-Hub-Signature-256"}
	// peerHeaders are the names go-github and the Node.js library read: their
	// API, not ours.
	peerHeaders = headerNames{"X-Github-Event", "X-Github-Delivery", "X-Hub-Signature-256"}
)

type config struct {
	n, c, warmup int
	duration     time.Duration
	unique       bool // a body of its own for every request (-unique)
}

type result struct {
	n             int
	rps, p50, p99 float64 // requests/s, µs
	cpu           float64 // server CPU µs per request
	user          float64 // the user-space part of cpu
	sleeps        float64 // voluntary context switches of the server per request
}

// drive starts receiver s, sends the warm-up and the measured requests, and
// stops it.
func drive(s, forgehooks string, d *bench.Delivery, cfg config) (result, error) {
	port, err := freePort()
	if err != nil {
		return result{}, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	var cmd *exec.Cmd
	path, hdr, want := "/", forgeHeaders, 200
	switch s {
	case "serve":
		cmd = exec.Command(forgehooks, "serve", "--addr", addr, "--secret", bench.Secret)
		path = "/api/forge/webhooks"
	case "serve-inbox":
		// A fresh inbox each time, removed after: the directory the
		// receiver stores in is its own.
		dir, err := os.MkdirTemp("", "forgehooks-load-inbox-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(dir)
		if countRecords {
			// Deferred after the receiver's stop below: its store is closed.
			defer printRecords(forgehooks, filepath.Join(dir, "inbox"))
		}
		cmd = exec.Command(forgehooks, "serve", "--addr", addr, "--secret", bench.Secret, "--inbox", filepath.Join(dir, "inbox"), "--max-store-bytes", "8GiB")
		path, want = "/api/forge/webhooks", 202
	case "node":
		cmd = nodeRecv.command(addr, bench.Secret, profileDir)
		hdr = peerHeaders
	case "go-github", "inbox":
		if s == "go-github" {
			hdr = peerHeaders
		} else {
			want = 202
		}
		fallthrough
	default:
		self, err := os.Executable()
		if err != nil {
			return result{}, err
		}
		args := []string{"-serve", s, "-addr", addr}
		if profileDir != "" {
			args = append(args, "-cpuprofile", filepath.Join(profileDir, s+".prof"))
		}
		cmd = exec.Command(self, args...)
	}
	cmd = pinned(cmd)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	// serve logs a line per delivery: only the start of it is kept, to say why
	// a receiver that never listens failed.
	start := &headWriter{max: 4096}
	cmd.Stdout, cmd.Stderr = io.Discard, start
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		// SIGTERM lets a profiling receiver write its profile; then kill.
		cmd.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		t.Stop()
	}()
	if err := waitListening(addr, 10*time.Second); err != nil {
		return result{}, fmt.Errorf("%w; its output began: %s", err, start.String())
	}
	if s == "node" {
		if err := nodeRecv.checkIsNode(cmd.Process.Pid); err != nil {
			return result{}, err
		}
	}
	conns := make([]*conn, cfg.c)
	for i := range conns {
		if conns[i], err = dial(i, addr, path, d, hdr, want, cfg.unique); err != nil {
			return result{}, err
		}
		defer conns[i].c.Close()
	}

	if _, err := run(conns, cfg.warmup, cfg.duration); err != nil {
		return result{}, fmt.Errorf("warm-up: %w", err)
	}
	before, beforeUser, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	beforeSleeps, err := sleeps(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	t0 := time.Now()
	lat, err := run(conns, cfg.n, cfg.duration)
	elapsed := time.Since(t0)
	if err != nil {
		return result{}, err
	}
	// What the receiver still does for these requests once they are
	// answered counts too: a durable receiver's workers run the deliveries
	// stored, and may be behind when the load stops.
	after, afterUser, err := settledCPU(cmd.Process.Pid, 30*time.Second)
	if err != nil {
		return result{}, err
	}
	afterSleeps, err := sleeps(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	return result{
		n:      len(lat),
		rps:    float64(len(lat)) / elapsed.Seconds(),
		p50:    pct(lat, 0.50),
		p99:    pct(lat, 0.99),
		cpu:    float64((after - before).Microseconds()) / float64(len(lat)),
		user:   float64((afterUser - beforeUser).Microseconds()) / float64(len(lat)),
		sleeps: float64(afterSleeps-beforeSleeps) / float64(len(lat)),
	}, nil
}

// run sends up to n requests over conns, one at a time on each, for at most
// dur, and returns each one's latency in µs.
func run(conns []*conn, n int, dur time.Duration) ([]float64, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		all      []float64
		firstErr error
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(dur)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []float64
			defer func() {
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			}()
			for next.Add(1) <= int64(n) && time.Now().Before(deadline) {
				t := time.Now()
				if err := c.do(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat = append(lat, float64(time.Since(t).Nanoseconds())/1e3)
			}
		}()
	}
	wg.Wait()
	return all, firstErr
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// cpuTime is the user and system CPU time a process has used, and the user
// part of it alone, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of
// 1/100 s: USER_HZ is 100 on Linux whatever the kernel's HZ).
func cpuTime(pid int) (total, user time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc stat: %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("unexpected /proc stat: %q", b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("unexpected /proc stat: %q", b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, time.Duration(utime) * 10 * time.Millisecond, nil
}

// settledCPU waits until process pid is idle (under 2% of a CPU over a
// quarter of a second), for at most max, and returns its CPU times then, as
// cpuTime does.
func settledCPU(pid int, max time.Duration) (total, user time.Duration, err error) {
	const every = 250 * time.Millisecond
	total, user, err = cpuTime(pid)
	for deadline := time.Now().Add(max); err == nil && time.Now().Before(deadline); {
		time.Sleep(every)
		t, u, terr := cpuTime(pid)
		if terr != nil {
			return 0, 0, terr
		}
		busy := t - total
		total, user = t, u
		if busy < every/50 {
			break
		}
	}
	return total, user, err
}

// sleeps returns how many times the threads of process pid have blocked
// (voluntary context switches, from /proc/<pid>/task/*/status). A receiver
// that waits for the next request sleeps and is woken, which costs system
// time; one that always has a request queued does not, so the count per
// request says how busy each receiver was kept (a thread that has ended is
// no longer counted).
func sleeps(pid int) (int64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread has ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				k, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("unexpected /proc status line %q", line)
				}
				n += k
			}
		}
	}
	return n, nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(w.buf.String())
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %s after %s", addr, timeout)
}
