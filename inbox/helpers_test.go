package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const testSecret = "inbox-test-secret"

// testKey is the inbox key of the tests' cluster inboxes.
var testKey = []byte("inbox-test-key-0123456789abcdef-0123456789")

// quiet is a logger for tests: warnings and errors go to t.Log when -v.
func quiet(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.end)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter writes to the test's log until the test's cleanups ran: a
// handler that ignores its context may outlive Close, and t.Log after the
// test ended panics (and races with testing's own state).
type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

func (w *testWriter) end() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// newWebhooks returns a Webhooks with the test secret.
func newWebhooks(t testing.TB) *webhooks.Webhooks {
	t.Helper()
	wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

// openInbox opens an embedded inbox in dir, closed at the end of the test.
func openInbox(t testing.TB, dir string, o Options) *Inbox {
	t.Helper()
	o.Dir = dir
	if o.Logger == nil {
		o.Logger = quiet(t)
	}
	in, err := openStarted(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	return in
}

// receiver serves the middleware of wh with in over real HTTP on 127.0.0.1.
func receiver(t testing.TB, wh *webhooks.Webhooks, in webhooks.Inbox) *httptest.Server {
	t.Helper()
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in, Logger: quiet(t)})
	srv := httptest.NewServer(mw)
	t.Cleanup(srv.Close)
	return srv
}

// post sends a delivery signed with secret and returns the status and body.
func post(t testing.TB, client *http.Client, url, event, id string, body []byte, secret string) (int, string, error) {
	sig, err := signing.Sign(secret, body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+webhooks.DefaultPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, event)
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	req.Header.Set("User-Agent", "forge-hookshot/test")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func payload(id string) []byte {
	return fmt.Appendf(nil, `{"action":"opened","delivery":%q,"repository":{"full_name":"o/r"}}`, id)
}

// seen counts the runs of each delivery's handlers.
type seen struct {
	mu   sync.Mutex
	runs map[string][]webhooks.Delivery
	ch   chan string
}

func newSeen() *seen {
	return &seen{runs: map[string][]webhooks.Delivery{}, ch: make(chan string, 100000)}
}

func (s *seen) add(info webhooks.Delivery) {
	s.mu.Lock()
	s.runs[info.ID] = append(s.runs[info.ID], info)
	s.mu.Unlock()
	s.ch <- info.ID
}

func (s *seen) get(id string) []webhooks.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]webhooks.Delivery(nil), s.runs[id]...)
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitHandled waits up to d for the delivery id to be listed as handled.
func waitHandled(t testing.TB, in *Inbox, id string, d time.Duration) {
	t.Helper()
	waitFor(t, d, id+" handled", func() bool {
		r, err := in.Get(context.Background(), id)
		return err == nil && r.Status == delivery.StatusHandled
	})
}

// unique returns body, a JSON object, with a member naming id added first:
// distinct deliveries carry distinct bodies (the replay guard answers a body
// stored under another id as a duplicate).
func unique(body []byte, id string) []byte {
	q, _ := json.Marshal(id)
	out := append([]byte(`{"_id":`), q...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...)
}

// openStarted opens an inbox and, when it has a Receiver, starts its
// workers.
func openStarted(ctx context.Context, o Options) (*Inbox, error) {
	in, err := Open(ctx, o)
	if err != nil || o.Receiver == nil {
		return in, err
	}
	if err := in.Start(ctx); err != nil {
		in.Close(ctx)
		return nil, err
	}
	return in, nil
}

// messageOf is the stored message Enqueue would publish for d.
func messageOf(t testing.TB, in *Inbox, d webhooks.Delivery, digest string) *nats.Msg {
	t.Helper()
	g, err := in.scanBody(d)
	if err != nil {
		t.Fatal(err)
	}
	return in.message(d, digest, g)
}
