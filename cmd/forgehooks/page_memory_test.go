package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestServePageMemory stores 60 deliveries of 25 MiB through the real inbox
// (enqueued and handled in this process), then runs `forgehooks serve --inbox
// --ui` as a process of its own, opens the page (its list) and runs four
// searches at once, twice: serve's peak RSS (VmHWM) stays under 300 MiB,
// since lists and searches read the deliveries' headers only. It writes
// 1.5 GB to disk and takes about 75 s with -race (25 s without): set
// FORGEHOOKS_PAGE_MEMORY=1 to run it.
func TestServePageMemory(t *testing.T) {
	if os.Getenv("FORGEHOOKS_PAGE_MEMORY") == "" {
		t.Skip("writes 1.5 GB: set FORGEHOOKS_PAGE_MEMORY=1 to run it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads peak RSS from /proc")
	}
	const (
		secret = "page-memory-secret-0123456789"
		n      = 60
		size   = 25 << 20
	)
	dir := t.TempDir()
	began := time.Now()
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var handled sync.WaitGroup
	handled.Add(n)
	wh.OnAny(func(context.Context, emitter.Event) error { handled.Done(); return nil })
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: dir, Receiver: wh, Workers: 2, MaxStoreBytes: 4 << 30, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	filler := bytes.Repeat([]byte("a"), size)
	for i := range n {
		p := fmt.Appendf(nil, `{"action":"opened","repository":{"full_name":"octo/repo-%d"},"sender":{"login":"user%d"},"pad":"`, i, i)
		p = append(p, filler[:size-len(p)-2]...)
		p = append(p, `"}`...)
		if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: fmt.Sprintf("big-%02d", i), Name: "issues", Payload: p}); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	handled.Wait()
	if err := in.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries of %d MiB stored and handled in %v", n, size>>20, time.Since(began).Round(time.Millisecond))

	bin := filepath.Join(t.TempDir(), "forgehooks")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--inbox", dir, "--max-store-bytes", "4GiB", "--ui", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), secretEnv+"="+secret, "GOMAXPROCS=2")
	p, err := attack.Start(cmd, regexp.MustCompile(`inspector page" url=http://([^/"]+)/`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	base, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.Addr+path, nil)
		res, err := (&http.Client{Timeout: testTimeout}).Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			return 0, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if code, _ := get("/"); code != 200 {
		t.Fatalf("the page: %d", code)
	}
	code, body := get("/api/deliveries?limit=50")
	var list struct {
		Rows []struct{ ID, Repository, Sender string }
	}
	if err := json.Unmarshal(body, &list); code != 200 || err != nil || len(list.Rows) != 50 || list.Rows[0].Repository != "octo/repo-59" || list.Rows[0].Sender != "user59" {
		t.Fatalf("list: %d %v %.300s", code, err, body)
	}
	afterList, _ := p.PeakRSS()
	for round := range 2 {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := []string{"repo-1", "user4", "big-0", "nothing-matches"}[i]
				code, body := get("/api/deliveries?limit=100&q=" + q)
				if code != 200 || !json.Valid(body) || (q != "nothing-matches" && !strings.Contains(string(body), q)) {
					t.Errorf("search %q (round %d): %d %.200s", q, round, code, body)
				}
			}()
		}
		wg.Wait()
	}
	afterSearch, _ := p.PeakRSS()
	t.Logf("peak RSS: %.1f MiB after the list, %.1f MiB after the searches", float64(afterList)/(1<<20), float64(afterSearch)/(1<<20))
	// One detail view: the payload loads for it, cut for the page.
	if code, body := get("/api/delivery?key=d:big-07"); code != 200 || !bytes.Contains(body, []byte(`"truncated":true`)) {
		t.Errorf("detail: %d %.200s", code, body)
	}
	peak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serve's peak RSS (VmHWM): %.1f MiB after start, %.1f MiB after the page, 8 searches and a detail view", float64(base)/(1<<20), float64(peak)/(1<<20))
	if peak > 300<<20 {
		t.Errorf("peak RSS %.1f MiB, want under 300 MiB", float64(peak)/(1<<20))
	}
}
