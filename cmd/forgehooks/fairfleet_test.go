package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestFleetFairShareDeep: a split fleet ('serve --workers 0' and 'work
// --workers 2') on a NATS server with JetStream on 127.0.0.1. Tenant a posts
// 1,000 deliveries (5,000 with FORGEHOOKS_LONG=1) whose forwards take 200
// ms; then tenant b posts 12, one after the other, whose forwards take 100
// ms: each of b's is forwarded within 100 ms + 1 s of its 202, while most of
// a's still wait.
func TestFleetFairShareDeep(t *testing.T) {
	t.Parallel()
	n := 1000
	if longtest.Enabled() {
		n = 5000
	}
	const (
		floodForward = 200 * time.Millisecond
		quietForward = 100 * time.Millisecond
		slack        = time.Second
		nB           = 12
	)
	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	if err := os.WriteFile(file, []byte(fairTenantsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var aDone atomic.Int64
	var mu sync.Mutex
	forwarded := map[string]time.Time{} // b's, by id
	runs := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tenant, id := r.Header.Get(webhooks.HeaderTenant), r.Header.Get(webhooks.HeaderDelivery)
		d := floodForward
		if tenant == "b" {
			d = quietForward
		}
		time.Sleep(d)
		mu.Lock()
		runs[tenant+"/"+id]++
		if tenant == "b" {
			forwarded[id] = time.Now()
		}
		mu.Unlock()
		if tenant == "a" {
			aDone.Add(1)
		}
	}))
	defer target.Close()
	url := plainNATS(t)
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--workers", "0", "--tenants", file, "--path", "/t/{tenant}/hooks",
		"--nats", url, "--replicas", "1", "--forward", target.URL)
	start(t, nil, "work", "--workers", "2", "--nats", url, "--replicas", "1", "--forward", target.URL)
	base := "http://" + sv.addr
	client := &http.Client{Timeout: testTimeout}
	post := func(tenant, id string) error { return postTenant(client, base, tenant, id) }
	started := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := post("a", fmt.Sprintf("a%d", i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("posting a's deliveries: %v", err)
	}
	t.Logf("a posted %d in %v; %d forwarded by then", n, time.Since(started).Round(time.Millisecond), aDone.Load())
	var waits []time.Duration
	for i := range nB {
		id := fmt.Sprintf("b%d", i)
		if err := post("b", id); err != nil {
			t.Fatal(err)
		}
		posted := time.Now()
		var end time.Time
		waitUntil(t, "b's "+id+" forwarded", func() bool {
			mu.Lock()
			defer mu.Unlock()
			end = forwarded[id]
			return !end.IsZero()
		})
		waits = append(waits, end.Sub(posted))
	}
	left := int64(n) - aDone.Load()
	t.Logf("b's deliveries, 202 to forwarded: %v (forward %v); %d of a's still waiting", waits, quietForward, left)
	for i, w := range waits {
		if w > quietForward+slack {
			t.Errorf("b%d forwarded %v after its 202, more than its forward's %v + %v", i, w.Round(time.Millisecond), quietForward, slack)
		}
	}
	if left < int64(n)/2 {
		t.Errorf("only %d of a's %d still waited at the end: b did not meet a backlog", left, n)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, r := range runs {
		if r != 1 {
			t.Errorf("%s forwarded %d times", id, r)
		}
	}
}

// TestFleetMixedAckWait: the tenants' consumers are made by whoever stores
// first ('serve --workers 0 --ack-wait 1s'), the workers lease for longer
// ('work --ack-wait 30s', two of them). A tenant's backlog on its own
// subject, whose forwards take 2.5 s, is forwarded once per delivery: the
// workers renew each lease within the shortest AckWait of the consumers
// they take from, not their own.
func TestFleetMixedAckWait(t *testing.T) {
	t.Parallel()
	const n = 24
	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	if err := os.WriteFile(file, []byte(fairTenantsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(2500 * time.Millisecond)
		mu.Lock()
		runs[r.Header.Get(webhooks.HeaderDelivery)]++
		mu.Unlock()
	}))
	defer target.Close()
	url := plainNATS(t)
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--workers", "0", "--tenants", file, "--path", "/t/{tenant}/hooks",
		"--nats", url, "--replicas", "1", "--ack-wait", "1s")
	for range 2 {
		start(t, nil, "work", "--workers", "4", "--nats", url, "--replicas", "1", "--ack-wait", "30s", "--forward", target.URL)
	}
	client := &http.Client{Timeout: testTimeout}
	for i := range n {
		if err := postTenant(client, "http://"+sv.addr, "a", fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "every delivery forwarded", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == n
	})
	// A lease that ran out would have its delivery forwarded again by the
	// other worker within an AckWait and a forward.
	time.Sleep(4 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	for id, c := range runs {
		if c != 1 {
			t.Errorf("%s forwarded %d times", id, c)
		}
	}
}

// postTenant posts an issues delivery with id to tenant's path
// (/t/{tenant}/hooks, fairTenantsYAML's secrets) at base: an error unless
// it is answered 202.
func postTenant(client *http.Client, base, tenant, id string) error {
	body := []byte(`{"action":"opened","n":"` + id + `"}`)
	sig, _ := signing.Sign("tenant-"+tenant+"-secret-0123456", body)
	r, err := http.NewRequest(http.MethodPost, base+"/t/"+tenant+"/hooks", bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, "issues")
	r.Header.Set(webhooks.HeaderDelivery, id)
	r.Header.Set(webhooks.HeaderSignature, sig)
	res, err := client.Do(r)
	if err != nil {
		return err
	}
	ans, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: %d %s", id, res.StatusCode, ans)
	}
	return nil
}
