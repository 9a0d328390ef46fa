package receiver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/webhooks"
)

// floodEnv sets the size of TestIdleConnectionFlood: FORGEHOOKS_CONN_FLOOD=20000
// opens 20,000 idle keep-alive connections against the default MaxConns;
// unset, 1,000 against a bound of 200, which takes a few seconds.
const floodEnv = "FORGEHOOKS_CONN_FLOOD"

// floodClientEnv makes the test binary a flood client: "ADDR N" opens N
// keep-alive connections to ADDR, each left idle after one request.
const floodClientEnv = "FORGEHOOKS_CONN_FLOOD_CLIENT"

// perClient is the most connections one client process opens, well within
// its file descriptor limit.
const perClient = 10000

// TestIdleConnectionFlood: a flood of idle keep-alive connections (opened
// by other processes, so that the server's process holds only its own
// ends) leaves the server's open connections within MaxConns, and fresh
// deliveries are answered 200.
func TestIdleConnectionFlood(t *testing.T) {
	if spec := os.Getenv(floodClientEnv); spec != "" {
		floodClient(t, spec)
		return
	}
	n, maxConns := 1000, 200
	if v := os.Getenv(floodEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("%s=%q: not a count", floodEnv, v)
		}
		maxConns = 0 // the default
	}
	bound := maxConns
	if bound == 0 {
		bound = receiver.DefaultMaxConns
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("no file descriptor limit to read: %v", err)
	}
	if lim.Cur < uint64(bound)+512 {
		lim.Cur = min(lim.Max, uint64(bound)+512)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < uint64(bound)+512 {
			t.Skipf("the file descriptor limit (%d, hard %d) is too low for %d connections: %v", lim.Cur, lim.Max, bound, err)
		}
	}

	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
	listening := make(chan string, 1)
	r, err := receiver.New(context.Background(), receiver.Options{
		Webhooks: wh, Addr: "127.0.0.1:0", MaxConns: maxConns, Logger: slog.New(slog.DiscardHandler),
		OnListen: func(part, addr string) { listening <- addr },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	addr := <-listening

	start := time.Now()
	var held atomic.Int64
	var wg sync.WaitGroup
	for left := n; left > 0; left -= perClient {
		k := min(left, perClient)
		cmd := exec.Command(os.Args[0], "-test.run=^TestIdleConnectionFlood$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", floodClientEnv, addr, k))
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() }) // the clients hold their connections until then
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "idle "); ok {
					m, _ := strconv.Atoi(v)
					held.Add(int64(m))
					break
				}
			}
			go io.Copy(io.Discard, out)
		}()
	}
	wg.Wait()
	t.Logf("%d connections opened and left idle after a keep-alive answer in %v", held.Load(), time.Since(start).Round(time.Millisecond))
	if held.Load() < int64(n)*9/10 {
		t.Fatalf("only %d of %d connections were answered with keep-alive", held.Load(), n)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		t.Logf("the server's process holds %d file descriptors (bound %d connections)", len(fds), bound)
		if len(fds) > bound+256 {
			t.Errorf("%d file descriptors open, past the bound of %d connections", len(fds), bound)
		}
	}

	// Fresh deliveries, each on a new connection, are answered.
	for i := range 4 {
		start := time.Now()
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
		body := []byte(`{"action":"opened"}`)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+webhooks.DefaultPath, strings.NewReader(string(body)))
		sig, _ := wh.Sign(body)
		req.Header = http.Header{"Content-Type": {"application/json"}, webhooks.HeaderEvent: {"issues"}, webhooks.HeaderDelivery: {fmt.Sprint("fresh-", i)}, webhooks.HeaderSignature: {sig}}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("fresh delivery %d: %v", i, err)
		}
		res.Body.Close()
		t.Logf("fresh delivery %d: %d after %v", i, res.StatusCode, time.Since(start).Round(time.Millisecond))
		if res.StatusCode != http.StatusOK {
			t.Errorf("fresh delivery %d: %d, want 200", i, res.StatusCode)
		}
	}
	if got := handled.Load(); got != 4 {
		t.Errorf("%d deliveries handled, want 4", got)
	}
}

// floodClient opens the connections spec ("ADDR N") asks for, 16 at a
// time, each after one request answered with keep-alive; prints "idle K"
// with the count of those; and holds them until stdin closes.
func floodClient(t *testing.T, spec string) {
	addr, count, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		idle  atomic.Int64
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", webhooks.DefaultPath)
				c.SetReadDeadline(time.Now().Add(time.Minute))
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if !res.Close {
					idle.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("idle %d\n", idle.Load())
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}
