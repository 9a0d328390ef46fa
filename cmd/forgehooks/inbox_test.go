package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// deliver POSTs a signed delivery with id and returns the status and body.
func deliver(t *testing.T, url, event, id string, body []byte, extra http.Header) (int, string) {
	t.Helper()
	sig, err := signing.Sign(testSecret, body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		r.Header[k] = v
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, event)
	r.Header.Set(webhooks.HeaderDelivery, id)
	r.Header.Set(webhooks.HeaderSignature, sig)
	res, err := (&http.Client{Timeout: testTimeout}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeInboxCommands: serve --inbox stores, handles, retries on the
// schedule of --retry-delays and buries; the inbox command lists, shows and
// retries over the same directory once serve stopped; the next serve runs
// the retried delivery.
func TestServeInboxCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	rec := newReceived()
	setup := func(wh *webhooks.Webhooks) {
		rec.setup(wh)
		wh.On("issues", func(ctx context.Context, e emitter.Event) error {
			if e.ID == "bad" && failing.Load() {
				return errors.New("the database is down")
			}
			return nil
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--retry-delays", "10ms,20ms")
	url := "http://" + sv.addr + webhooks.DefaultPath
	// A body per delivery: the replay guard answers one body under another
	// id as a duplicate.
	bodyOf := func(id string) []byte {
		return []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"},"n":"` + id + `"}`)
	}
	for _, tc := range []struct {
		id   string
		want int
	}{{"good", 202}, {"bad", 202}, {"good", 200}} {
		if code, ans := deliver(t, url, "issues", tc.id, bodyOf(tc.id), nil); code != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.id, code, ans, tc.want)
		}
	}
	rec.waitFor(t, "good")
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(sv.stderr.String(), "dead letter") {
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter logged:\n%s", sv.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := sv.stop(); code != exitOK {
		t.Fatalf("serve exited %d:\n%s", code, sv.stderr)
	}
	log := sv.stderr.String()
	for _, want := range []string{"delivery handled", "id=good", `msg="inbox: handlers failed; retrying later"`, "the database is down", "attempts=3"} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, log)
		}
	}

	code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "good") || !strings.Contains(out, "handled") || !strings.Contains(out, "dead") || !strings.Contains(out, "issues.opened") {
		t.Errorf("inbox ls: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "ls", "--inbox", dir, "--status", "dead", "--json")
	var recs []struct {
		ID          string
		Name, Event string
		Status      string
		Attempts    []struct{ Number int }
		Payload     json.RawMessage
	}
	// A list carries no payloads (delivery.Store). The event name is "name",
	// and "event" too, its former key, for scripts.
	if err := json.Unmarshal([]byte(out), &recs); code != exitOK || err != nil || len(recs) != 1 || recs[0].ID != "bad" || len(recs[0].Attempts) != 3 || recs[0].Payload != nil ||
		recs[0].Name != "issues" || recs[0].Event != "issues" {
		t.Errorf("inbox ls --status dead --json: %d %v %+v\n%s", code, err, recs, out)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "show", "bad", "--inbox", dir, "--json")
	recs = recs[:1]
	if err := json.Unmarshal([]byte(out), &recs[0]); code != exitOK || err != nil || string(recs[0].Payload) != string(bodyOf("bad")) {
		t.Errorf("inbox show --json: %d %v\n%s", code, err, out)
	}
	// The text form redacts the signature, as the page does, and indents
	// the payload.
	code, out, _ = runCmd(t, "", nil, "inbox", "show", "bad", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "the database is down") || !strings.Contains(out, "X-Hub-Signature-256: [redacted]") ||
		strings.Contains(out, "sha256=") || !strings.Contains(out, "{\n  \"action\": \"opened\",\n  \"issue\": {\n    \"number\": 1\n  },") {
		t.Errorf("inbox show: %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "dead", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "bad") || strings.Contains(out, "good") {
		t.Errorf("inbox dead: %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"inbox", "ls"},
		{"inbox", "frob", "--inbox", dir},
		{"inbox", "show", "--inbox", dir},
		{"inbox", "ls", "--inbox", dir, "--nats", "nats://127.0.0.1:1"},
	} {
		if code, _, errOut := runCmd(t, "", nil, bad...); code != exitUsage {
			t.Errorf("%q: exit %d, want usage error; %s", bad, code, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "", nil, "inbox", "show", "nope", "--inbox", dir); code != exitFailure || !strings.Contains(errOut, "no such delivery") {
		t.Errorf("show of an unknown id: %d %s", code, errOut)
	}
	if code, out, errOut := runCmd(t, "", nil, "inbox", "retry", "bad", "--inbox", dir); code != exitOK {
		t.Fatalf("inbox retry: %d %s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "", nil, "serve", "--secret", testSecret, "--retry-delays", "5s"); code != exitUsage || !strings.Contains(errOut, "needs --inbox") {
		t.Errorf("--retry-delays without an inbox: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", nil, "serve", "--secret", testSecret, "--inbox", dir, "--retry-delays", "5x"); code != exitUsage || !strings.Contains(errOut, "not a duration") {
		t.Errorf("--retry-delays 5x: %d %s", code, errOut)
	}

	failing.Store(false)
	rec2 := newReceived()
	sv = start(t, &cli{setup: func(wh *webhooks.Webhooks) { rec2.setup(wh); setup(wh) }}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir)
	// While serve holds the directory, the inbox command goes through its
	// admin socket.
	if code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--inbox", dir); code != exitOK || !strings.Contains(out, "good") {
		t.Errorf("inbox ls while serve runs: %d %s%s", code, out, errOut)
	}
	got := rec2.waitFor(t, "bad")
	if len(got) != 1 {
		t.Errorf("after restart %d deliveries ran, want only the retried one", len(got))
	}
	sv.stop()
	code, out, _ = runCmd(t, "", nil, "inbox", "show", "bad", "--inbox", dir, "--json")
	var r struct {
		Status   string
		Attempts []struct{ Number int }
	}
	if json.Unmarshal([]byte(out), &r); code != exitOK || r.Status != "handled" || len(r.Attempts) != 4 || r.Attempts[3].Number != 4 {
		t.Errorf("after the retry: %d %+v\n%s", code, r, out)
	}
	// Replay stores a handled delivery again; it waits for the next serve.
	if code, out, errOut := runCmd(t, "", nil, "inbox", "replay", "good", "--inbox", dir); code != exitOK || !strings.Contains(out, "stored again") {
		t.Fatalf("inbox replay: %d %s%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "show", "good", "--inbox", dir, "--json")
	if json.Unmarshal([]byte(out), &r); code != exitOK || r.Status != "queued" || len(r.Attempts) != 1 {
		t.Errorf("after the replay: %d %+v\n%s", code, r, out)
	}
}

// TestServeInboxForward: --forward re-POSTs each stored delivery with its
// original headers and exact bytes; a non-2xx answer is retried.
func TestServeInboxForward(t *testing.T) {
	t.Parallel()
	type got struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var gots []got
	var calls atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gots = append(gots, got{r.Header.Clone(), b})
		mu.Unlock()
		if calls.Add(1) == 1 {
			http.Error(w, "not yet", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer app.Close()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", t.TempDir(), "--retry-delays", "10ms", "--forward", app.URL+"/hook")
	// Odd spacing and key order: the bytes must arrive as sent.
	body := []byte("{ \"zen\" : \"Keep it logically awesome.\",\n  \"hook_id\":1 }")
	if code, ans := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "ping", "fwd-1", body, http.Header{"X-Custom": {"kept"}, "Nats-Rollup": {"all"}}); code != 202 {
		t.Fatalf("%d %s", code, ans)
	}
	deadline := time.Now().Add(testTimeout)
	for calls.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("forwarded %d times, want 2 (a 502, then a 204):\n%s", calls.Load(), sv.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sv.stop()
	mu.Lock()
	defer mu.Unlock()
	for i, g := range gots {
		if !bytes.Equal(g.body, body) {
			t.Errorf("forward %d: body %q, want %q", i, g.body, body)
		}
		for k, want := range map[string]string{
			webhooks.HeaderEvent: "ping", webhooks.HeaderDelivery: "fwd-1", "X-Custom": "kept", "Content-Type": "application/json",
			"Forgehooks-Attempt": fmt.Sprint(i + 1),
		} {
			if g.header.Get(k) != want {
				t.Errorf("forward %d: %s = %q, want %q", i, k, g.header.Get(k), want)
			}
		}
		if sig := g.header.Get(webhooks.HeaderSignature); sig == "" {
			t.Errorf("forward %d: no signature header", i)
		} else if ok, _ := signing.Verify(testSecret, g.body, sig); !ok {
			t.Errorf("forward %d: the signature does not verify the forwarded bytes", i)
		}
	}
	if len(gots) != 2 {
		t.Errorf("forwarded %d times, want 2", len(gots))
	}
	if !strings.Contains(sv.stderr.String(), "502 Bad Gateway") {
		t.Errorf("serve's log does not show the 502:\n%s", sv.stderr)
	}
}

// TestServeInboxFinal: a handler's final error (webhooks.Permanent) makes
// its delivery a dead letter after one attempt, with retries left on the
// schedule; inbox dead, show and their --json forms say it was final.
func TestServeInboxFinal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setup := func(wh *webhooks.Webhooks) {
		wh.On("issues", func(ctx context.Context, e emitter.Event) error {
			return webhooks.Permanent(errors.New("resource not accessible"))
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--retry-delays", "10ms,10ms,10ms")
	url := "http://" + sv.addr + webhooks.DefaultPath
	if code, ans := deliver(t, url, "issues", "final", []byte(`{"action":"opened"}`), nil); code != http.StatusAccepted {
		t.Fatalf("%d %s, want 202", code, ans)
	}
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(sv.stderr.String(), "dead letters") {
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter logged:\n%s", sv.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := sv.stop(); code != exitOK {
		t.Fatalf("serve exited %d:\n%s", code, sv.stderr)
	}
	if log := sv.stderr.String(); !strings.Contains(log, "final error") || strings.Contains(log, "retrying later") {
		t.Errorf("serve's log does not say the error was final, or retried it:\n%s", log)
	}
	code, out, errOut := runCmd(t, "", nil, "inbox", "dead", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "dead (final)") || !strings.Contains(out, "resource not accessible") {
		t.Errorf("inbox dead: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "dead", "--inbox", dir, "--json")
	var recs []struct {
		Status   string
		Attempts []struct {
			Error string
			Final bool
		}
	}
	if err := json.Unmarshal([]byte(out), &recs); code != exitOK || err != nil || len(recs) != 1 || len(recs[0].Attempts) != 1 || !recs[0].Attempts[0].Final {
		t.Errorf("inbox dead --json: %d %v %+v\n%s", code, err, recs, out)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "show", "final", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "status:   dead (final)") || !strings.Contains(out, "final error (not retried): resource not accessible") {
		t.Errorf("inbox show: %d\n%s", code, out)
	}
}
