package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// poisonTarget is the forward target of TestServeOrderPoisonedKeys: it fails
// every delivery of a poisoned repository (ids 1000 and up) and records the
// others as they come.
type poisonTarget struct {
	mu        sync.Mutex
	forwarded map[int][]string // repository → delivery ids, in the order forwarded
	at        []time.Time      // when each healthy delivery was forwarded
}

func (p *poisonTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var d struct {
		Repository struct {
			ID int `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(body, &d)
	if d.Repository.ID >= 1000 {
		http.Error(w, "poisoned", http.StatusServiceUnavailable)
		return
	}
	p.mu.Lock()
	p.forwarded[d.Repository.ID] = append(p.forwarded[d.Repository.ID], r.Header.Get(webhooks.HeaderDelivery))
	p.at = append(p.at, time.Now())
	p.mu.Unlock()
}

func (p *poisonTarget) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.at)
}

func repoBody(id string, repo int) []byte {
	return fmt.Appendf(nil, `{"action":"edited","delivery":%q,"repository":{"id":%d,"full_name":"o/r%d"}}`, id, repo, repo)
}

// TestServeOrderPoisonedKeys: a real 'forgehooks serve --order-by repository
// --retry-delays 1h' forwarding to a target that fails every delivery of 64
// "poisoned" repositories (one delivery each, covering every partition);
// then 2 deliveries for each of 64 other repositories: all 128 are
// forwarded, in order per repository, within 15 s. Then 'forgehooks inbox
// skip' sets a poisoned delivery aside through the serve's admin socket: the
// delivery queued behind it is forwarded, and the inspector page lists the
// skipped one as dead.
func TestServeOrderPoisonedKeys(t *testing.T) {
	t.Parallel()
	target := &poisonTarget{forwarded: map[int][]string{}}
	ts := httptest.NewServer(target)
	defer ts.Close()
	dir := t.TempDir()
	p := startServe(t, "--inbox", dir, "--order-by", "repository", "--retry-delays", "1h", "--forward", ts.URL, "--ui", "127.0.0.1:0")
	ui := regexp.MustCompile(`inspector page" url=http://([^/"]+)/`)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(id string, repo int) {
		t.Helper()
		code, body, err := attack.Post(client, p.Addr, webhooks.DefaultPath, attackSecret, "issues", id, repoBody(id, repo))
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("posting %s: %d %s %v", id, code, body, err)
		}
	}
	for r := range 64 {
		post(fmt.Sprintf("poisoned-%d", 1000+r), 1000+r)
	}
	// A later delivery of a poisoned repository waits behind it.
	post("poisoned-1000-later", 1000)
	start := time.Now()
	for r := range 64 {
		for _, n := range []string{"a", "b"} {
			post(fmt.Sprintf("healthy-%d-%s", r, n), r)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for target.count() < 128 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	target.mu.Lock()
	n := len(target.at)
	var took time.Duration
	if n > 0 {
		took = target.at[n-1].Sub(start)
	}
	for r := range 64 {
		if got, want := target.forwarded[r], []string{fmt.Sprintf("healthy-%d-a", r), fmt.Sprintf("healthy-%d-b", r)}; !slices.Equal(got, want) {
			t.Errorf("repository %d forwarded %v, want %v", r, got, want)
		}
	}
	target.mu.Unlock()
	if n < 128 {
		t.Fatalf("%d of 128 healthy deliveries forwarded after 60 s beside 64 failing repositories:\n%s", n, p.Output())
	}
	t.Logf("128 deliveries of 64 healthy repositories forwarded in %v beside 64 poisoned ones (retry in 1h)", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("the 128 healthy deliveries took %v, want within 15 s", took)
	}

	// Skip, through the running serve's admin socket.
	bin := serveBinary(t)
	inbox := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"inbox"}, append(args, "--inbox", dir)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("inbox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := inbox("show", "poisoned-1000-later"); !strings.Contains(out, "queued") {
		t.Errorf("the delivery behind a poisoned one is not queued:\n%s", out)
	}
	if out, err := exec.Command(bin, "inbox", "skip", "healthy-0-a", "--inbox", dir).CombinedOutput(); err == nil || !strings.Contains(string(out), "does not wait") {
		t.Errorf("skip of a handled delivery: %v\n%s", err, out)
	}
	inbox("skip", "poisoned-1000")
	// The target fails repository 1000: the later delivery runs (and fails,
	// its retry an hour away), which its first attempt shows.
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(inbox("show", "poisoned-1000-later"), "attempts: 1") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if out := inbox("show", "poisoned-1000-later"); !strings.Contains(out, "attempts: 1") {
		t.Errorf("the delivery behind the skipped one did not run:\n%s", out)
	}
	if out := inbox("ls", "--status", "dead"); !strings.Contains(out, "poisoned-1000 ") {
		t.Errorf("the skipped delivery is not listed dead:\n%s", out)
	}
	if !strings.Contains(p.Output(), "set aside as a dead letter") {
		t.Errorf("the skip was not logged:\n%s", p.Output())
	}
	m := ui.FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("no inspector address in the output:\n%s", p.Output())
	}
	res, err := client.Get("http://" + m[1] + "/api/delivery?key=d:poisoned-1000")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rec struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(res.Body).Decode(&rec); err != nil || rec.Status != "dead" {
		t.Errorf("the page shows the skipped delivery as %q (%v), want dead", rec.Status, err)
	}
}
