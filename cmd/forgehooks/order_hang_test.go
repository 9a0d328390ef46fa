package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// hangTarget is the forward target of TestServeOrderHangingTarget: it never
// answers a delivery of a hanging repository (ids 1000 and up) until the
// test ends, and records the others as they come.
type hangTarget struct {
	release chan struct{}
	hanging atomic.Int64 // requests of hanging repositories received
	mu      sync.Mutex
	at      map[string]time.Time // healthy delivery id → when forwarded
	byRepo  map[int][]string     // repository → delivery ids, in the order forwarded
}

func (h *hangTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var d struct {
		Repository struct {
			ID int `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(body, &d)
	id := r.Header.Get(webhooks.HeaderDelivery)
	h.mu.Lock()
	h.byRepo[d.Repository.ID] = append(h.byRepo[d.Repository.ID], id)
	h.mu.Unlock()
	if d.Repository.ID >= 1000 {
		h.hanging.Add(1)
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
		http.Error(w, "hung", http.StatusServiceUnavailable)
		return
	}
	h.mu.Lock()
	h.at[id] = time.Now()
	h.mu.Unlock()
}

func (h *hangTarget) forwardedAt(id string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.at[id]
	return at, ok
}

// TestServeOrderHangingTarget: a real 'forgehooks serve --order-by
// repository --attempt-timeout 500ms' (GOMAXPROCS 2: 16 places for ordered
// deliveries) forwarding to a target that never answers the deliveries of
// 16 repositories, which so take every place at each of their attempts (a
// retry every second). Deliveries of other repositories, posted one after
// another for several rounds of those retries, are each forwarded within 1 s
// (their forward's time plus 1 s) of their 202; a later delivery of a
// hanging repository is not forwarded while its first one fails.
func TestServeOrderHangingTarget(t *testing.T) {
	t.Parallel()
	target := &hangTarget{release: make(chan struct{}), at: map[string]time.Time{}, byRepo: map[int][]string{}}
	ts := httptest.NewServer(target)
	defer ts.Close()
	defer close(target.release)
	p := startServe(t, "--inbox", t.TempDir(), "--order-by", "repository", "--attempt-timeout", "500ms",
		"--retry-delays", "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s", "--forward", ts.URL)
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(id string, repo int) time.Time {
		t.Helper()
		code, body, err := attack.Post(client, p.Addr, webhooks.DefaultPath, attackSecret, "issues", id, repoBody(id, repo))
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("posting %s: %d %s %v", id, code, body, err)
		}
		return time.Now()
	}
	const hanging = 16
	for r := range hanging {
		post(fmt.Sprintf("hang-%d", 1000+r), 1000+r)
	}
	post("hang-1000-later", 1000)
	deadline := time.Now().Add(30 * time.Second)
	for target.hanging.Load() < hanging && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := target.hanging.Load(); n < hanging {
		t.Fatalf("%d of %d hanging forwards reached the target:\n%s", n, hanging, p.Output())
	}
	var worst time.Duration
	end := time.Now().Add(4 * time.Second) // about three rounds of the hanging ones' retries
	n := 0
	for ; n < 8 || time.Now().Before(end); n++ {
		id := fmt.Sprintf("healthy-%d", n)
		stored := post(id, n)
		var at time.Time
		for ok := false; !ok; {
			if at, ok = target.forwardedAt(id); !ok {
				if time.Since(stored) > 30*time.Second {
					t.Fatalf("%s not forwarded within 30 s:\n%s", id, p.Output())
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		wait := at.Sub(stored)
		worst = max(worst, wait)
		if wait > time.Second {
			t.Errorf("%s forwarded %v after its 202, beside %d hanging repositories; want within 1 s", id, wait, hanging)
		}
	}
	retried := target.hanging.Load()
	t.Logf("%d healthy deliveries beside %d hanging repositories (%d hanging forwards): the slowest forwarded %v after its 202",
		n, hanging, retried, worst.Round(time.Millisecond))
	if retried < 2*hanging {
		t.Errorf("the hanging repositories were tried %d times, want their retries to have hung too (at least %d)", retried, 2*hanging)
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	for _, id := range target.byRepo[1000] {
		if id != "hang-1000" {
			t.Errorf("repository 1000 forwarded %v: the later delivery ran while the first one failed", target.byRepo[1000])
			break
		}
	}
	if !slices.Contains(target.byRepo[1000], "hang-1000") {
		t.Errorf("repository 1000 forwarded %v, want hang-1000", target.byRepo[1000])
	}
}
