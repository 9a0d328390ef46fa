package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// forwarded records what a forward target was sent: per delivery id, the
// attempt numbers and body marks, in the order they came.
type forwarded struct {
	mu       sync.Mutex
	attempts map[string][]int
	marks    map[string][]string
}

func (f *forwarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(webhooks.HeaderDelivery)
	n, _ := strconv.Atoi(r.Header.Get(inbox.HeaderAttempt))
	mark := "first"
	if strings.Contains(string(body), `"second"`) {
		mark = "second"
	}
	f.mu.Lock()
	f.attempts[id] = append(f.attempts[id], n)
	f.marks[id] = append(f.marks[id], mark)
	f.mu.Unlock()
}

// killBody is a delivery's body: its id, and which of the two posts it is.
func killBody(id, mark string) []byte {
	return []byte(`{"action":"opened","repository":{"full_name":"o/r"},"id":"` + id + `","mark":"` + mark + `"}`)
}

// TestServeKillForgetsNoID runs a `forgehooks serve --inbox` process built
// from the tree under load, SIGKILLs it about 1 ms after an
// acknowledgement, restarts it and posts every id acknowledged so far again
// with another body: each must be answered 200 duplicate, never stored
// again. At the end every acknowledged delivery was forwarded, only with
// its first body, and the attempt numbers of each id went up (a run cut
// by a kill is followed by the next number, never the same one).
// FORGEHOOKS_KILL_ROUNDS sets the kills (default 3).
func TestServeKillForgetsNoID(t *testing.T) {
	t.Parallel()
	bin := serveBinary(t)
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("FORGEHOOKS_KILL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	target := &forwarded{attempts: map[string][]int{}, marks: map[string][]string{}}
	ts := httptest.NewServer(target)
	defer ts.Close()
	dir := t.TempDir()
	start := func() *attack.Process {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--inbox", dir, "--forward", ts.URL, "--ack-wait", "2s")
		cmd.Env = append(os.Environ(), secretEnv+"="+attackSecret, "GOMAXPROCS=2")
		p, err := attack.Start(cmd, regexp.MustCompile(`url"?[=:]"?http://([^/"]+)/`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var acked []string // every id answered 2xx
	var killedAfter []time.Duration
	for round := range rounds {
		p := start()
		// Every id acknowledged so far is known, whatever its body.
		repost(t, client, p.Addr, acked)
		var (
			mu      sync.Mutex
			got     []string
			lastAck atomic.Int64
			stop    atomic.Bool
			wg      sync.WaitGroup
		)
		threshold := 100 + rand.IntN(400)
		reached := make(chan struct{})
		for w := range 8 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					id := fmt.Sprintf("kill-%d-%d-%d", round, w, i)
					code, _, err := attack.Post(client, p.Addr, webhooks.DefaultPath, attackSecret, "issues", id, killBody(id, "first"))
					if err != nil {
						return
					}
					if code/100 == 2 {
						lastAck.Store(time.Now().UnixNano())
						mu.Lock()
						got = append(got, id)
						if len(got) == threshold {
							close(reached)
						}
						mu.Unlock()
					}
				}
			})
		}
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: fewer than %d deliveries acknowledged in a minute:\n%s", round, threshold, p.Output())
		}
		time.Sleep(time.Millisecond)
		killedAfter = append(killedAfter, time.Since(time.Unix(0, lastAck.Load())).Round(10*time.Microsecond))
		p.Stop() // SIGKILL
		stop.Store(true)
		wg.Wait()
		mu.Lock()
		acked = append(acked, got...)
		mu.Unlock()
	}
	p := start()
	repost(t, client, p.Addr, acked)
	// Every acknowledged delivery is forwarded, those cut by a kill once
	// their lease ran out.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		target.mu.Lock()
		missing := 0
		for _, id := range acked {
			if len(target.attempts[id]) == 0 {
				missing++
			}
		}
		target.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged deliveries never forwarded", missing, len(acked))
		}
		time.Sleep(200 * time.Millisecond)
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	again := 0
	for id, as := range target.attempts {
		for i, a := range as {
			if i > 0 && a <= as[i-1] {
				t.Errorf("%s forwarded with attempts %v: the numbering went back", id, as)
				break
			}
		}
		for _, m := range target.marks[id] {
			if m != "first" {
				t.Errorf("%s forwarded with its second body: stored again after the kill", id)
				break
			}
		}
		again += len(as) - 1
	}
	t.Logf("%d kills (each %v after the last acknowledgement); %d deliveries acknowledged, each posted again with another body after every later start: all duplicates; %d runs beyond the first, numbered on",
		rounds, killedAfter, len(acked), again)
}

// repost posts each id with a second body: the answer must be 200
// duplicate.
func repost(t *testing.T, client *http.Client, addr string, ids []string) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for id := range work {
				code, body, err := attack.Post(client, addr, webhooks.DefaultPath, attackSecret, "issues", id, killBody(id, "second"))
				if err != nil || code != http.StatusOK || strings.TrimSpace(body) != "duplicate" {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%s: %d %q %v", id, code, strings.TrimSpace(body), err))
					mu.Unlock()
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d acknowledged ids posted again with another body not answered 200 duplicate, e.g. %v", len(bad), len(ids), bad[:min(5, len(bad))])
	}
}
