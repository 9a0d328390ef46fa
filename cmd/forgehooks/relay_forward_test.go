package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/signing"
	"github.com/google/go-cmp/cmp"
)

// TestRelayTargetDropsForgedDeliveries: relay --target with a secret forwards a
// validly signed delivery with the forge's headers only and its exact bytes;
// a forged one, posted to the channel with extra headers and a query string,
// never reaches the target.
func TestRelayTargetDropsForgedDeliveries(t *testing.T) {
	t.Parallel()
	type hit struct {
		header http.Header
		query  string
		body   []byte
	}
	var mu sync.Mutex
	var hits []hit
	arrived := make(chan struct{}, 8)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Header.Clone(), r.URL.RawQuery, b})
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer target.Close()

	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)
	connected := make(chan struct{}, 1)
	rl := start(t, &cli{connected: func() { connected <- struct{}{} }},
		"relay", "--source", channel, "--target", target.URL+"/hook", "--secret", testSecret)
	<-connected

	post := func(body, sig, id string) {
		t.Helper()
		req, _ := http.NewRequest("POST", channel+"?token=leak&x=1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "Forge-Hookshot/abc")
		req.Header.Set("X-Forge-Event", "ping")
		req.Header.Set("X-Forge-Delivery", id)
		req.Header.Set("X-Forge-Hook-Id", "42")
		req.Header.Set("X-Hub-Signature-256", sig)
		req.Header.Set("Authorization", "Bearer not-for-the-target")
		req.Header.Set("Cookie", "session=not-for-the-target")
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		req.Header.Set("X-Evil", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST to the channel: %s", resp.Status)
		}
	}
	// Bytes a re-encoding would change: spacing, escapes, a trailing newline.
	valid := "{\"zen\": \"<&>\\u00e9\",  \"hook_id\": 42}\n"
	forgedSig, _ := signing.Sign("not the secret", []byte(valid))
	goodSig, _ := signing.Sign(testSecret, []byte(valid))
	post(valid, forgedSig, "forged-1")
	post(valid, "", "forged-2")
	post(valid, goodSig, "valid-1")

	select {
	case <-arrived:
	case <-time.After(testTimeout):
		t.Fatalf("the valid delivery did not arrive; relay log:\n%s", rl.stderr)
	}
	// Deliveries are relayed in order: had a forged one been forwarded, it
	// would have arrived first. Give a stray one a moment anyway.
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 1 {
		t.Fatalf("target got %d requests, want only the valid one", len(hits))
	}
	h := hits[0]
	if string(h.body) != valid {
		t.Errorf("body %q, want the exact bytes %q", h.body, valid)
	}
	if h.query != "" {
		t.Errorf("query %q reached the target", h.query)
	}
	h.header.Del("Accept-Encoding") // Go's transport adds it
	want := http.Header{
		"Content-Type": {"application/json"}, "User-Agent": {"Forge-Hookshot/abc"},
		"X-Forge-Event": {"ping"}, "X-Forge-Delivery": {"valid-1"}, "X-Forge-Hook-Id": {"42"},
		"X-Hub-Signature-256": {goodSig}, "Content-Length": {"37"},
	}
	if diff := cmp.Diff(want, h.header); diff != "" {
		t.Errorf("headers at the target (-want +got):\n%s", diff)
	}
	log := rl.stderr.String()
	for _, id := range []string{"forged-1", "forged-2"} {
		if !strings.Contains(log, "delivery dropped, not forwarded") || !strings.Contains(log, "id="+id) {
			t.Errorf("relay did not log dropping %s:\n%s", id, log)
		}
	}
}
