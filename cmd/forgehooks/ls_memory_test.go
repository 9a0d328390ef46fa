package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxLsMemory stores N deliveries (200,000 by default;
// FORGEHOOKS_LS_MEMORY_N sets another) through the real inbox, handled in
// this process, then runs 'forgehooks serve --inbox' as a process of its
// own and 'forgehooks inbox ls --json --limit -1' through its admin socket:
// the listing holds every delivery once, ends within a minute (the admin
// client's timeout for one request), and adds under 100 MiB to serve's
// resident memory (its peak, VmHWM, reset before the listing). Storing
// 200,000 takes minutes: set FORGEHOOKS_LS_MEMORY=1 to run it.
func TestInboxLsMemory(t *testing.T) {
	if os.Getenv("FORGEHOOKS_LS_MEMORY") == "" {
		t.Skip("stores 200,000 deliveries: set FORGEHOOKS_LS_MEMORY=1 to run it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads peak RSS from /proc")
	}
	n := 200_000
	if s := os.Getenv("FORGEHOOKS_LS_MEMORY_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			t.Fatalf("FORGEHOOKS_LS_MEMORY_N=%q", s)
		}
	}
	const secret = "ls-memory-secret-0123456789"
	dir := t.TempDir()
	began := time.Now()
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: dir, Receiver: wh, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// About the size of a small real delivery's headers and body.
	pad := strings.Repeat("p", 1500)
	var wg sync.WaitGroup
	var next atomic.Int64
	errc := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				p := fmt.Appendf(nil, `{"action":"opened","repository":{"full_name":"octo/repo-%d"},"n":%d,"pad":"%s"}`, i%97, i, pad)
				if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: fmt.Sprintf("ls-%07d", i), Name: "issues", Payload: p}); err != nil {
					errc <- fmt.Errorf("enqueue %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	stored := time.Since(began)
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	deadline := time.Now().Add(10 * time.Minute)
	for handled.Load() < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handled after 10 minutes", handled.Load(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := in.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries stored in %v, handled in %v", n, stored.Round(time.Second), time.Since(began).Round(time.Second))

	bin := filepath.Join(t.TempDir(), "forgehooks")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--inbox", dir)
	cmd.Env = append(os.Environ(), secretEnv+"="+secret, "GOMAXPROCS=2")
	p, err := attack.Start(cmd, regexp.MustCompile(`receiving deliveries" url=http://([^/"]+)/`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pid := cmd.Process.Pid
	time.Sleep(2 * time.Second) // let the start settle
	// Writing 5 to clear_refs sets the peak (VmHWM) to the present RSS.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting serve's peak RSS: %v", err)
	}
	base, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}

	ls := exec.Command(bin, "inbox", "ls", "--inbox", dir, "--json", "--limit", "-1")
	out, err := ls.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	ls.Stderr = &stderr
	start := time.Now()
	var lsPeak int64
	peakDone := make(chan error, 1)
	go func() {
		var err error
		lsPeak, err = attack.RunPeak(ls)
		peakDone <- err
	}()
	// Read the listing as it comes: one record at a time.
	dec := json.NewDecoder(bufio.NewReader(out))
	seen := make(map[string]bool, n)
	var firstAt time.Duration
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		t.Fatalf("ls --json starts with %v %v; stderr: %s", tok, err, stderr.String())
	}
	for dec.More() {
		var r struct {
			ID     string
			Status string
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("record %d: %v", len(seen), err)
		}
		if len(seen) == 0 {
			firstAt = time.Since(start)
		}
		if seen[r.ID] || r.Status != "handled" {
			t.Errorf("record %d: %s %s (seen before: %v)", len(seen), r.ID, r.Status, seen[r.ID])
		}
		seen[r.ID] = true
	}
	if err := <-peakDone; err != nil {
		t.Fatalf("ls: %v\n%s", err, stderr.String())
	}
	took := time.Since(start)
	peak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	added := peak - base
	t.Logf("inbox ls --json --limit -1 through serve's admin socket: %d deliveries in %v (first after %v); serve's RSS %.1f MiB before, peak %.1f MiB during (+%.1f MiB); ls's own peak RSS %.1f MiB",
		len(seen), took.Round(10*time.Millisecond), firstAt.Round(time.Millisecond), float64(base)/(1<<20), float64(peak)/(1<<20), float64(added)/(1<<20), float64(lsPeak)/(1<<20))
	if len(seen) != n {
		t.Errorf("listed %d deliveries, want %d", len(seen), n)
	}
	if took > time.Minute {
		t.Errorf("the listing took %v, want well under a minute", took)
	}
	if added > 100<<20 {
		t.Errorf("serve's peak RSS grew %.1f MiB while listing, want under 100 MiB", float64(added)/(1<<20))
	}
}
