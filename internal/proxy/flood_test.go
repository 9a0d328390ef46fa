package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/sse"
)

// floodChildEnv names the journal directory of the proxy TestFloodChild runs.
const floodChildEnv = "FORGEHOOKS_PROXY_FLOOD_CHILD"

// TestFloodChild is the proxy process of TestFloodBoundedMemory: a Server with
// the default options and a journal, on 127.0.0.1, until stdin closes. It runs
// alone in its process so that the process's peak RSS is the proxy's.
func TestFloodChild(t *testing.T) {
	dir := os.Getenv(floodChildEnv)
	if dir == "" {
		t.Skip("the proxy process of TestFloodBoundedMemory")
	}
	opts := Options{JournalDir: dir}
	debug.SetMemoryLimit(MemoryLimit(opts)) // as forgehooks proxy does
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening %s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := Shutdown(ctx, srv, p); err != nil {
		t.Fatal(err)
	}
}

// floodChild is a running TestFloodChild.
type floodChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startFloodChild(t *testing.T, dir string) *floodChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), floodChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fc := &floodChild{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { fc.stop(t) })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				lines <- addr
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case fc.addr = <-lines:
	case <-time.After(testTimeout):
		t.Fatal("the proxy process did not start")
	}
	return fc
}

func (fc *floodChild) stop(t *testing.T) {
	if fc.stdin == nil {
		return
	}
	fc.stdin.Close()
	fc.stdin = nil
	done := make(chan error, 1)
	go func() { done <- fc.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the proxy process: %v", err)
		}
	case <-time.After(testTimeout):
		fc.cmd.Process.Kill()
		t.Error("the proxy process did not stop")
	}
}

// peakRSS returns the process's peak resident set (VmHWM), in bytes.
func (fc *floodChild) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", fc.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc to read the peak RSS from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func dirBytes(t *testing.T, dir string) (journals int64, files int) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	for _, n := range names {
		if st, err := os.Stat(n); err == nil {
			journals += st.Size()
			files++
		}
	}
	return journals, files
}

const mib = 1 << 20

// TestFloodBoundedMemory floods a proxy with the default options (and a
// journal), in a process of its own, with forged deliveries: one channel, then
// several, far more bytes than its bounds. The peak RSS stays bounded, the
// journals stay under MaxJournalBytes, a subscriber with a made-up
// Last-Event-ID gets nothing replayed, and a restart on the full journal stays
// bounded too.
func TestFloodBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a proxy with hundreds of MiB")
	}
	// Peak RSS allowed: the bounds' live bytes (buffers 128 MiB, deliveries
	// being received) and the garbage collector's headroom. Generous, and
	// more so under the race detector, whose shadow memory doubles the heap
	// and more. With only per-channel bounds of 100 deliveries, the seven
	// channels would hold 1.6 GiB of messages.
	limit := int64(600 * mib)
	perMain, perOther := 160, 40
	if raceEnabled {
		// Less volume, still well past the bounds, for the time's sake.
		limit = 1200 * mib
		perMain, perOther = 60, 15
	}
	dir := t.TempDir()
	fc := startFloodChild(t, dir)
	base := "http://" + fc.addr
	client := &http.Client{Timeout: testTimeout}
	newCh := func() string {
		noRedirect := &http.Client{Timeout: testTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Get(base + "/new")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Location")
	}
	body := []byte(`{"pad":"` + strings.Repeat("x", 1*mib) + `"}`)
	flood := func(channels []string, perChannel int) (ok, busy int) {
		var mu sync.Mutex
		work := make(chan string)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for url := range work {
					req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Forge-Event", "push")
					req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64)) // forged
					resp, err := client.Do(req)
					if err != nil {
						t.Error(err)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					switch resp.StatusCode {
					case 200:
						ok++
					case 503:
						busy++
					default:
						t.Errorf("POST: %s", resp.Status)
					}
					mu.Unlock()
				}
			}()
		}
		for i := 0; i < perChannel; i++ {
			for _, ch := range channels {
				work <- ch
			}
		}
		close(work)
		wg.Wait()
		return ok, busy
	}

	// One channel, flooded: 160 deliveries of 1 MiB, 373 MiB of messages.
	main := newCh()
	ok, busy := flood([]string{main}, perMain)
	rssOne := fc.peakRSS(t)
	// Six channels: 6 × 40 deliveries, 560 MiB of messages.
	var many []string
	for range 6 {
		many = append(many, newCh())
	}
	ok2, busy2 := flood(many, perOther)
	rssMany := fc.peakRSS(t)
	journal, files := dirBytes(t, dir)
	t.Logf("flood: %d+%d deliveries of %d bytes accepted (%d+%d answered 503); peak RSS %.0f MiB after one channel, %.0f MiB after seven; journals %.1f MiB in %d files",
		ok, ok2, len(body), busy, busy2, float64(rssOne)/mib, float64(rssMany)/mib, float64(journal)/mib, files)
	if ok == 0 || ok2 == 0 {
		t.Fatal("no delivery was accepted")
	}
	if rssMany > limit {
		t.Errorf("peak RSS %d MiB, over %d MiB", rssMany/mib, limit/mib)
	}
	if journal > DefaultMaxJournalBytes {
		t.Errorf("journals hold %d MiB, over MaxJournalBytes %d MiB", journal/mib, DefaultMaxJournalBytes/mib)
	}

	// A made-up Last-Event-ID replays nothing: the next event after ready
	// is the delivery posted after subscribing.
	checkNoReplay := func(url string) {
		t.Helper()
		for _, id := range []string{"x-1", "AAAAAAAA-1-AAAAAAAAAAAAA", "0"} {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Last-Event-ID", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			s := &stream{t: t, rd: sse.NewReader(resp.Body, sse.Options{}), cancel: cancel, resp: resp}
			if n := s.ready(); n != 0 {
				t.Errorf("Last-Event-ID %q: %d to replay, want 0", id, n)
			}
			req2, _ := http.NewRequest("POST", url, strings.NewReader(`{"marker":true}`))
			if resp, err := client.Do(req2); err == nil {
				resp.Body.Close()
			}
			if got, _ := s.message(); got != `{"marker":true}` {
				t.Errorf("Last-Event-ID %q: first message is %.60q, want the one posted after subscribing", id, got)
			}
			s.close()
		}
	}
	checkNoReplay(main)

	// Restart on the full journal.
	fc.stop(t)
	before, _ := dirBytes(t, dir)
	start := time.Now()
	fc = startFloodChild(t, dir)
	load := time.Since(start)
	rssRestart := fc.peakRSS(t)
	main = "http://" + fc.addr + main[strings.LastIndex(main, "/"):]
	after, _ := dirBytes(t, dir)
	t.Logf("restart on %.1f MiB of journals: ready in %v, peak RSS %.0f MiB; journals %.1f MiB after",
		float64(before)/mib, load.Round(time.Millisecond), float64(rssRestart)/mib, float64(after)/mib)
	if rssRestart > limit {
		t.Errorf("peak RSS %d MiB after a restart, over %d MiB", rssRestart/mib, limit/mib)
	}
	checkNoReplay(main)
}
