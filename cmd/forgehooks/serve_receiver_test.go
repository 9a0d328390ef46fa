package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/promtext"
	"forgehooks.dev/forgehooks/webhooks"
)

// failing makes the handlers of some delivery ids fail: fail[id] more times
// (negative: always).
type failing struct {
	mu    sync.Mutex
	fail  map[string]int
	calls map[string]int
}

func (f *failing) setup(wh *webhooks.Webhooks) {
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[e.ID]++
		if n := f.fail[e.ID]; n != 0 {
			f.fail[e.ID] = n - 1
			return errors.New("downstream down for " + e.ID)
		}
		return nil
	})
}

func (f *failing) set(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[id] = n
}

func (f *failing) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeInboxOperatedWhileRunning: with serve --inbox DIR running, the
// inbox command lists through serve's admin socket, and retry of a dead
// letter runs it in that serve, whose handlers now succeed.
func TestServeInboxOperatedWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := &failing{fail: map[string]int{"doomed": -1}, calls: map[string]int{}}
	sv := start(t, &cli{setup: f.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--retry-delays", "10ms")
	url := "http://" + sv.addr + webhooks.DefaultPath
	for _, id := range []string{"fine", "doomed"} {
		// A body of its own: the replay guard answers a body stored under
		// another id as a duplicate.
		body := []byte(`{"action":"opened","id":"` + id + `","repository":{"full_name":"o/r"}}`)
		if code, ans := deliver(t, url, "issues", id, body, nil); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", id, code, ans)
		}
	}
	waitUntil(t, "the dead letter", func() bool {
		_, out, _ := runCmd(t, "", nil, "inbox", "dead", "--inbox", dir)
		return strings.Contains(out, "doomed")
	})
	code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--inbox", dir)
	if code != exitOK || !regexp.MustCompile(`(?m)^\d+\s+doomed\s+issues\.opened\s+dead\s+2\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\d+\s+fine\s+issues\.opened\s+handled\s+1\s`).MatchString(out) ||
		!strings.Contains(out, "downstream down for doomed") {
		t.Fatalf("inbox ls while serve runs: %d\n%s%s", code, out, errOut)
	}
	f.set("doomed", 0)
	code, out, errOut = runCmd(t, "", nil, "inbox", "retry", "doomed", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "the running serve runs its handlers") {
		t.Fatalf("inbox retry while serve runs: %d %s%s", code, out, errOut)
	}
	waitUntil(t, "the retried dead letter to run in serve", func() bool { return f.count("doomed") == 3 })
	waitUntil(t, "its status", func() bool {
		_, out, _ := runCmd(t, "", nil, "inbox", "show", "doomed", "--inbox", dir)
		return strings.Contains(out, "status:   handled") && strings.Contains(out, "#3 ")
	})
	if code, _, errOut := runCmd(t, "", nil, "inbox", "retry", "fine", "--inbox", dir); code != exitFailure ||
		!strings.Contains(errOut, "not a dead letter") || strings.Contains(errOut, "inbox: inbox:") {
		t.Errorf("retry of a handled delivery: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", nil, "inbox", "show", "nope", "--inbox", dir); code != exitFailure ||
		!strings.HasPrefix(errOut, "forgehooks inbox: no such delivery") {
		t.Errorf("show of an unknown id through the socket: %d %q", code, errOut)
	}
	if code := sv.stop(); code != exitOK {
		t.Fatalf("serve exited %d:\n%s", code, sv.stderr)
	}
}

// TestServeInboxMetrics scrapes /metrics of serve --inbox --metrics and parses
// it strictly: a delivery failing twice then handled, and a dead letter, are
// separate series.
func TestServeInboxMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := &failing{fail: map[string]int{"flaky": 2, "doomed": -1}, calls: map[string]int{}}
	sv := start(t, &cli{setup: f.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir,
		"--retry-delays", "10ms,10ms", "--metrics", "127.0.0.1:0")
	m := metricsURL.FindStringSubmatch(sv.stderr.String())
	if m == nil {
		t.Fatalf("serve's log does not give the metrics URL:\n%s", sv.stderr)
	}
	url := "http://" + sv.addr + webhooks.DefaultPath
	deliver(t, url, "issues", "flaky", []byte(`{"action":"opened"}`), nil)
	deliver(t, url, "push", "doomed", []byte(`{"ref":"refs/heads/main"}`), nil)
	scrape := func() *promtext.Exposition {
		res, err := http.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		e, err := promtext.Parse(string(body))
		if err != nil {
			t.Fatalf("the metrics are not valid text format: %v\n%s", err, body)
		}
		return e
	}
	var e *promtext.Exposition
	waitUntil(t, "both deliveries settled", func() bool {
		e = scrape()
		h, _ := e.Value("forgehooks_inbox_attempts_total", "event", "issues", "outcome", "handled")
		d, _ := e.Value("forgehooks_inbox_attempts_total", "event", "push", "outcome", "dead")
		return h == 1 && d == 1
	})
	waitUntil(t, "the backlog to empty", func() bool {
		e = scrape()
		v, ok := e.Value("forgehooks_inbox_backlog")
		return ok && v == 0
	})
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"forgehooks_inbox_attempts_total", []string{"event", "issues", "outcome", "retrying"}, 2},
		{"forgehooks_inbox_attempts_total", []string{"event", "issues", "outcome", "handled"}, 1},
		{"forgehooks_inbox_attempts_total", []string{"event", "push", "outcome", "retrying"}, 2},
		{"forgehooks_inbox_attempts_total", []string{"event", "push", "outcome", "dead"}, 1},
		{"forgehooks_inbox_retries_scheduled_total", []string{"event", "issues"}, 2},
		{"forgehooks_inbox_retries_scheduled_total", []string{"event", "push"}, 2},
		{"forgehooks_inbox_dead_letters_total", []string{"event", "push"}, 1},
		{"forgehooks_inbox_handler_duration_seconds_count", []string{"event", "issues", "outcome", "retrying"}, 2},
		{"forgehooks_inbox_dead_letters", nil, 1},
		{"forgehooks_inbox_oldest_waiting_age_seconds", nil, 0},
		{"forgehooks_deliveries_total", []string{"event", "issues", "status", "202"}, 1},
	} {
		if got, ok := e.Value(tc.name, tc.labels...); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := e.Value("forgehooks_inbox_dead_letters_total", "event", "issues"); ok {
		t.Error("a dead-letter series for the delivery that was handled")
	}
}

// TestServeForward: --forward is checked at start and named in the log; a
// 503 from the target is logged with its status and the start of its answer,
// once per attempt, with and without an inbox.
func TestServeForward(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"notaurl", "ftp://127.0.0.1/x", "http://127.0.0.1:99999/x", "http:///x"} {
		code, _, errOut := runCmd(t, "", nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--forward", bad)
		if code != exitUsage || !strings.Contains(errOut, "--forward") {
			t.Errorf("--forward %s: exit %d %q, want 2 naming --forward", bad, code, errOut)
		}
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "upstream down:\nmaintenance window "+strings.Repeat("x", 2000))
	}))
	defer target.Close()
	const wantLine = `forward: 503 Service Unavailable: upstream down: maintenance window xxx`
	t.Run("inbox", func(t *testing.T) {
		dir := t.TempDir()
		sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir,
			"--retry-delays", "10ms,10ms", "--forward", target.URL+"/hook")
		if !strings.Contains(sv.stderr.String(), `forward=`+target.URL+"/hook") {
			t.Errorf("the start-up log does not name the forward URL:\n%s", sv.stderr)
		}
		deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "issues", "fw-1", []byte(`{"action":"opened"}`), nil)
		waitUntil(t, "the dead letter", func() bool { return strings.Contains(sv.stderr.String(), "moved to the dead letters") })
		sv.stop()
		log := sv.stderr.String()
		if n := strings.Count(log, wantLine); n != 3 {
			t.Errorf("the target's answer appears %d times, want once per attempt (3):\n%s", n, log)
		}
		if strings.Contains(log, strings.Repeat("x", 300)) {
			t.Error("the target's whole answer was logged")
		}
		// LAST ERROR starts with the cause.
		if _, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--inbox", dir); !strings.Contains(out, "  forward: 503 Service Unavailable: upstream down: maintena...\n") {
			t.Errorf("inbox ls:\n%s%s", out, errOut)
		}
	})
	t.Run("no inbox", func(t *testing.T) {
		sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--forward", target.URL+"/hook")
		code, _ := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "issues", "fw-2", []byte(`{"action":"opened"}`), nil)
		sv.stop()
		log := sv.stderr.String()
		if code != http.StatusInternalServerError || strings.Count(log, wantLine) != 1 || !strings.Contains(log, `msg="delivery failed" id=fw-2`) {
			t.Errorf("answer %d; want 500 and the target's answer logged once:\n%s", code, log)
		}
	})
}

// TestServeEdges: bad flag values are usage errors that name the flag; the
// help texts are each command's own.
func TestServeEdges(t *testing.T) {
	t.Parallel()
	if code, _, errOut := runCmd(t, "", nil, "serve", "--addr", "127.0.0.1:99999", "--secret", testSecret); code != exitUsage ||
		!strings.Contains(errOut, "--addr") || !strings.Contains(errOut, "99999") || strings.Contains(errOut, "another receiver") {
		t.Errorf("--addr 127.0.0.1:99999: exit %d %q", code, errOut)
	}
	_, help, _ := runCmd(t, "", nil, "serve", "--help")
	for _, group := range []string{"Receiving:", "Timeouts:", "Bounds:", "Durable inbox and forwarding:", "Inspector page and metrics:", "Catch-up:"} {
		if !strings.Contains(help, "\n"+group+"\n") {
			t.Errorf("serve --help lacks the group %q:\n%s", group, help)
		}
	}
	if i, j := strings.Index(help, "Bounds:"), strings.Index(help, "-max-body-bytes"); i < 0 || j < i {
		t.Errorf("--max-body-bytes is not under Bounds")
	}
	for _, cmd := range []string{"inbox", "catchup"} {
		_, help, _ := runCmd(t, "", nil, cmd, "--help")
		if !strings.Contains(help, "the directory of a serve's durable inbox") || strings.Contains(help, "before answering 202") {
			t.Errorf("%s --help: --inbox has serve's text:\n%s", cmd, help)
		}
	}
}

// TestCatchupDryRunUnreachable: a dry run against a forge that refuses the
// connection fails at once with the error, and prints no summary.
func TestCatchupDryRunUnreachable(t *testing.T) {
	t.Parallel()
	start := time.Now()
	code, out, errOut := runCmd(t, "", map[string]string{"TOKEN": "t"}, "catchup", "--dry-run", "--api-url", "http://127.0.0.1:1",
		"--repo", "o/r", "--hook-id", "1", "--token-env", "TOKEN")
	if code != exitFailure || out != "" || !strings.Contains(errOut, "connection refused") || strings.Contains(errOut, "catchup: catchup:") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing on stdout, the error", code, out, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}
