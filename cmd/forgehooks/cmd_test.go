package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// The forge's documented test vector for its signatures.
const (
	vectorSecret    = "It's a Secret to Everybody"
	vectorPayload   = "Hello, World!"
	vectorSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	payloadFile := filepath.Join(dir, "payload.json")
	os.WriteFile(payloadFile, []byte(vectorPayload), 0o600)
	withEnv := map[string]string{secretEnv: vectorSecret}
	badState := filepath.Join(dir, "state")
	os.WriteFile(badState, []byte("line one\nline two\n"), 0o600)
	tests := []struct {
		name        string
		stdin       string
		env         map[string]string
		args        []string
		code        int
		stdout      string // a substring, or "" for no check
		stderr      string
		exactStdout bool
	}{
		{name: "no command", args: nil, code: 2, stderr: "Usage: forgehooks <command>"},
		{name: "unknown command", args: []string{"launch"}, code: 2, stderr: `unknown command "launch"`},
		{name: "help", args: []string{"--help"}, code: 0, stdout: "Exit status: 0 success; 1 failure"},
		{name: "version", args: []string{"--version"}, code: 0, stdout: "forgehooks "},
		{name: "command help", args: []string{"relay", "--help"}, code: 0, stdout: "96 MiB"},
		{name: "bad flag", args: []string{"sign", "--nope"}, code: 2, stderr: "flag provided but not defined: -nope"},

		{name: "sign stdin", stdin: vectorPayload, args: []string{"sign", "--secret", vectorSecret}, code: 0, stdout: vectorSignature + "\n", exactStdout: true},
		{name: "sign file, flags after it", args: []string{"sign", payloadFile, "--secret", vectorSecret}, code: 0, stdout: vectorSignature + "\n", exactStdout: true},
		{name: "sign secret from env", stdin: vectorPayload, env: withEnv, args: []string{"sign", "-"}, code: 0, stdout: vectorSignature + "\n", exactStdout: true},
		{name: "sign without secret", stdin: vectorPayload, args: []string{"sign"}, code: 2, stderr: "pass --secret S or set FORGE_WEBHOOK_SECRET"},
		{name: "sign empty payload", stdin: "", args: []string{"sign", "--secret", "s"}, code: 1, stderr: "payload"},
		{name: "sign missing file", args: []string{"sign", "--secret", "s", filepath.Join(dir, "none")}, code: 2, stderr: "does not exist: give an existing file, or - to read stdin"},
		{name: "sign two files", args: []string{"sign", "--secret", "s", "a", "b"}, code: 2, stderr: "one payload file at most"},

		{name: "verify valid", stdin: vectorPayload, env: withEnv, args: []string{"verify", "--signature", vectorSignature}, code: 0, stdout: "valid\n", exactStdout: true},
		{name: "verify invalid", stdin: vectorPayload + " ", env: withEnv, args: []string{"verify", "--signature", vectorSignature}, code: 1, stdout: "invalid\n", exactStdout: true},
		{name: "verify wrong secret", stdin: vectorPayload, args: []string{"verify", "--secret", "other", "--signature", vectorSignature}, code: 1, stdout: "invalid"},
		{name: "verify malformed", stdin: vectorPayload, env: withEnv, args: []string{"verify", "--signature", "757107ea"}, code: 1, stderr: `starts with "sha256="`},
		{name: "verify sha1 needs opt-in", stdin: vectorPayload, env: withEnv, args: []string{"verify", "--signature", "sha1=" + strings.Repeat("0", 40)}, code: 1, stdout: "invalid"},
		{name: "verify without signature", stdin: vectorPayload, env: withEnv, args: []string{"verify"}, code: 2, stderr: "--signature is required"},
		{name: "verify without secret", stdin: vectorPayload, args: []string{"verify", "--signature", vectorSignature}, code: 2, stderr: "FORGE_WEBHOOK_SECRET"},

		{name: "serve without secret", args: []string{"serve"}, code: 2, stderr: "make serve"},
		{name: "serve stray argument", args: []string{"serve", "--secret", "s", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "serve cannot listen", args: []string{"serve", "--secret", "s", "--addr", "256.0.0.1:1"}, code: 1, stderr: "cannot listen"},
		{name: "serve warns on a short secret", args: []string{"serve", "--secret", "s", "--addr", "256.0.0.1:1"}, code: 1, stderr: "short secret"},
		{name: "proxy cannot listen", args: []string{"proxy", "--addr", "256.0.0.1:1"}, code: 1, stderr: "cannot listen"},

		{name: "send nothing", args: []string{"send", "--secret", "s"}, code: 2, stderr: "nothing to send"},
		{name: "send file without event", args: []string{"send", "--secret", "s", payloadFile}, code: 2, stderr: "--event NAME is required"},
		{name: "send unknown sample", args: []string{"send", "--secret", "s", "--event", "no_such_event"}, code: 2, stderr: `unknown event "no_such_event"`},
		{name: "send unknown action", args: []string{"send", "--secret", "s", "--event", "issues.exploded"}, code: 2, stderr: "issues.opened"},
		{name: "send sample out of range", args: []string{"send", "--secret", "s", "--event", "ping", "--sample", "99"}, code: 2, stderr: "--sample 99"},
		{name: "send without secret", args: []string{"send", "--event", "ping"}, code: 2, stderr: "FORGE_WEBHOOK_SECRET"},
		{name: "send nowhere", args: []string{"send", "--secret", "s", "--event", "ping", "--url", "http://127.0.0.1:1/x"}, code: 1, stderr: "is a receiver listening"},

		{name: "relay without source", args: []string{"relay", "--secret", "s"}, code: 2, stderr: "--source is required"},
		{name: "relay bad source", args: []string{"relay", "--source", "ftp://x/y", "--secret", "s"}, code: 2, stderr: "not an http(s) URL"},
		{name: "relay bad target port", args: []string{"relay", "--source", "http://127.0.0.1:1/c", "--secret", "s", "--target", "http://127.0.0.1:70000/"}, code: 2, stderr: "port 70000 is not a number from 1 to 65535"},
		{name: "relay bad source port", args: []string{"relay", "--source", "http://127.0.0.1:0/c", "--secret", "s"}, code: 2, stderr: "bad --source"},
		{name: "relay state not an id", args: []string{"relay", "--source", "http://127.0.0.1:1/c", "--secret", "s", "--state", badState}, code: 1, stderr: "does not hold an event id"},
		{name: "proxy bad port", args: []string{"proxy", "--addr", "127.0.0.1:99999"}, code: 2, stderr: "port \"99999\" is not a number from 0 to 65535"},
		{name: "proxy journal bound too small", args: []string{"proxy", "--max-buffered-bytes", "1000", "--max-journal-bytes", "1100"}, code: 2, stderr: "--max-journal-bytes 1100 is too small"},
		{name: "proxy no port", args: []string{"proxy", "--addr", "127.0.0.1"}, code: 2, stderr: "is not host:port"},
		{name: "relay no mode", args: []string{"relay", "--source", "http://127.0.0.1:1/c"}, code: 2, stderr: "give --target URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.stdin, tt.env, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.exactStdout && out != tt.stdout || !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.stderr)
			}
		})
	}
}

func TestSendHeadersAndAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got *http.Request
	var gotBody []byte
	status := http.StatusOK
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got, gotBody = r, nil
		gotBody, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
		io.WriteString(w, "answer body")
	}))
	defer ts.Close()

	code, out, errOut := runCmd(t, "", nil, "send", "--url", ts.URL, "--secret", vectorSecret, "--event", "issues.opened")
	if code != exitOK || out != "200 OK\nanswer body\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ok, _ := signing.Verify(vectorSecret, gotBody, got.Header.Get("X-Hub-Signature-256")); !ok {
		t.Error("the signature sent does not verify")
	}
	if !strings.Contains(string(gotBody), `"action":"opened"`) {
		t.Errorf("sample body is not an issues.opened payload: %.100s", gotBody)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for name, check := range map[string]func(string) bool{
		"X-Forge-Event":    func(v string) bool { return v == "issues" },
		"X-Forge-Delivery": uuid.MatchString,
		"Content-Type":     func(v string) bool { return v == "application/json" },
		"User-Agent":       func(v string) bool { return strings.HasPrefix(v, "forgehooks-send/") },
	} {
		if v := got.Header.Get(name); !check(v) {
			t.Errorf("%s: %q", name, v)
		}
	}
	firstID := got.Header.Get("X-Forge-Delivery")
	runCmd(t, "", nil, "send", "--url", ts.URL, "--secret", vectorSecret, "--event", "ping")
	if got.Header.Get("X-Forge-Delivery") == firstID {
		t.Error("the delivery id is not fresh")
	}

	status = http.StatusInternalServerError
	if code, out, _ := runCmd(t, "", nil, "send", "--url", ts.URL, "--secret", vectorSecret, "--event", "ping"); code != exitFailure || !strings.HasPrefix(out, "500 Internal Server Error\n") {
		t.Errorf("a 500 answer: exit %d, stdout %q; want exit 1 and the status printed", code, out)
	}
}

func TestServeLogsAndRejections(t *testing.T) {
	t.Parallel()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--json")
	url := "http://" + sv.addr + "/api/forge/webhooks"
	if code, _, _ := runCmd(t, "", nil, "send", "--url", url, "--secret", "wrong", "--event", "push", "--delivery", "bad-sig"); code != exitFailure {
		t.Errorf("a delivery with a bad signature: send exit %d, want 1", code)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "ping", "--delivery", "good")
	if code := sv.stop(); code != exitOK {
		t.Errorf("serve exited %d", code)
	}
	log := sv.stderr.String()
	for _, want := range []string{
		`"msg":"delivery rejected","id":"bad-sig","event":"push"`,
		`"reason":"signature does not match event payload and secret"`,
		`"reason":"Required headers missing: x-forge-event, x-hub-signature-256, x-forge-delivery"`,
		`"msg":"delivery ok","id":"good","event":"ping"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s\nlog:\n%s", want, log)
		}
	}
}

// TestServeShutdownWaitsForHandlers: SIGINT (here: the context's end) lets a
// running handler finish before serve returns.
func TestServeShutdownWaitsForHandlers(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	finished := false
	setup := func(wh *webhooks.Webhooks) {
		wh.On("ping", func(context.Context, emitter.Event) error {
			close(started)
			<-release
			mu.Lock()
			finished = true
			mu.Unlock()
			return nil
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--handler-timeout", "1ms")
	url := "http://" + sv.addr + "/api/forge/webhooks"
	code, out, _ := runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "ping")
	if code != exitOK || !strings.HasPrefix(out, "202") {
		t.Fatalf("send: exit %d %q, want 202 while the handler runs", code, out)
	}
	<-started
	// The delivery's line is written when it is answered, while its handler
	// still runs (serve's recorder keeps the middleware from running handlers
	// on the request's goroutine).
	for deadline := time.Now().Add(testTimeout); !strings.Contains(sv.stderr.String(), "delivery accepted; handlers still running"); {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("no line for the 202 while the handler runs:\n%s", sv.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		// If serve returned without waiting, it would do so well before this.
		time.Sleep(200 * time.Millisecond)
		close(release)
	}()
	if code := sv.stop(); code != exitOK {
		t.Errorf("serve exited %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if !finished {
		t.Error("serve returned before the running handler finished")
	}
}

// TestRelayReserialisedBody: a relay that gets only "body", re-serialised by
// another proxy, says so when the signature fails, instead of a bare mismatch.
func TestRelayReserialisedBody(t *testing.T) {
	t.Parallel()
	original := `{"zen": "Design for failure."}`
	sig, _ := signing.Sign(testSecret, []byte(original))
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"x-forge-event":"ping","x-forge-delivery":"re-1","x-hub-signature-256":"`+sig+`","content-length":"30","body":{"zen":"Design for failure."}}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer src.Close()
	rl := start(t, nil, "relay", "--source", src.URL, "--secret", testSecret)
	deadline := time.Now().Add(testTimeout)
	for !strings.Contains(rl.stderr.String(), "re-serialised") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rl.stop()
	if log := rl.stderr.String(); !strings.Contains(log, "the forge sent 30 bytes, the channel carried 29") {
		t.Errorf("relay log does not explain the re-serialised body:\n%s", log)
	}
}

func TestRelayRejectsWebPage(t *testing.T) {
	t.Parallel()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	code, _, errOut := runCmd(t, "", nil, "relay", "--source", "http://"+px.addr+"/", "--secret", "s")
	if code != exitFailure || !strings.Contains(errOut, "not text/event-stream") {
		t.Errorf("exit %d, stderr %q; want 1 and a clear error", code, errOut)
	}
}

// TestServeMaxInFlight: --max-in-flight bounds the deliveries whose handlers
// still run after their 202; past it serve answers 503, and its log lines give
// the count.
func TestServeMaxInFlight(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 4), make(chan struct{})
	defer close(release)
	setup := func(wh *webhooks.Webhooks) {
		wh.On("ping", func(context.Context, emitter.Event) error {
			started <- struct{}{}
			<-release
			return nil
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret,
		"--handler-timeout", "1ms", "--max-in-flight", "1")
	url := "http://" + sv.addr + "/api/forge/webhooks"
	code, out, _ := runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "ping")
	if code != exitOK || !strings.HasPrefix(out, "202") {
		t.Fatalf("first send: exit %d %q, want 202 while the handler runs", code, out)
	}
	<-started
	code, out, _ = runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "ping")
	if code != exitFailure || !strings.HasPrefix(out, "503") {
		t.Fatalf("second send: exit %d %q, want 503 with the only place taken", code, out)
	}
	log := sv.stderr.String()
	for _, want := range []string{"half the in-flight places are taken", "in_flight=1", "max_in_flight=1", "status=503"} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q:\n%s", want, log)
		}
	}
}
