//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestServeDescriptorLimit: serve with its defaults under a lowered
// descriptor limit (ulimit -n in a shell around the built binary) chooses a
// connection bound below the limit and logs it; a flood of idle keep-alive
// connections, more than the limit, leaves its descriptors below the limit,
// and a fresh delivery is answered 2xx at once. The default suite floods
// 700 connections against a limit of 512; FORGEHOOKS_LONG=1 runs the
// issue's case, 5,000 against 4,096, and wants the answer within 1 s.
func TestServeDescriptorLimit(t *testing.T) {
	t.Parallel()
	limit, conns, within := 512, 700, 5*time.Second
	if longtest.Enabled() {
		limit, conns, within = 4096, 5000, time.Second
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "forgehooks")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit), bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), secretEnv+"="+testSecret)
	p, line := startProc(t, cmd, regexp.MustCompile(`(receiving deliveries.*)`))
	addr := regexp.MustCompile(`url=http://([^/]+)/`).FindStringSubmatch(line)
	bound := regexp.MustCompile(`max_conns=(\d+)`).FindStringSubmatch(line)
	logged := regexp.MustCompile(`fd_limit=(\d+)`).FindStringSubmatch(line)
	if addr == nil || bound == nil || logged == nil {
		t.Fatalf("serve's line does not give its address, max_conns and fd_limit: %s", line)
	}
	maxConns, _ := strconv.Atoi(bound[1])
	if logged[1] != strconv.Itoa(limit) || maxConns <= 0 || maxConns >= limit-64 {
		t.Fatalf("serve chose max_conns=%d under fd_limit=%s; want a bound well below %d", maxConns, logged[1], limit)
	}
	t.Logf("serve under ulimit -n %d: max_conns=%d", limit, maxConns)

	// The flood: connections answered once with keep-alive, then left idle.
	var (
		mu    sync.Mutex
		held  []net.Conn
		idle  atomic.Int64
		next  atomic.Int64
		wg    sync.WaitGroup
		began = time.Now()
	)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(conns) {
				c, err := net.Dial("tcp", addr[1])
				if err != nil {
					continue
				}
				mu.Lock()
				held = append(held, c)
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
		})
	}
	wg.Wait()
	t.Logf("%d connections answered with keep-alive and left idle in %v", idle.Load(), time.Since(began).Round(time.Millisecond))
	if idle.Load() < int64(conns)*9/10 {
		t.Fatalf("only %d of %d connections were answered with keep-alive", idle.Load(), conns)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serve holds %d descriptors of %d", len(fds), limit)
	if len(fds) >= limit-16 {
		t.Errorf("serve holds %d descriptors: its table of %d is (nearly) full", len(fds), limit)
	}

	for i := range 3 {
		start := time.Now()
		id := fmt.Sprint("fresh-", i)
		code, ans := deliver(t, "http://"+addr[1]+webhooks.DefaultPath, "issues", id, []byte(`{"action":"opened","n":"`+id+`"}`), nil)
		took := time.Since(start)
		t.Logf("fresh delivery %d: %d in %v", i, code, took.Round(time.Microsecond))
		if code/100 != 2 {
			t.Fatalf("fresh delivery %d: %d %s\n%s", i, code, ans, p.output())
		}
		if took > within {
			t.Errorf("fresh delivery %d answered in %v, want within %v", i, took, within)
		}
	}
}
