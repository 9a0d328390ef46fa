package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/signing"
)

// recordingServer records the last request it got.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	req  *http.Request
	body []byte
	n    int
}

func newRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.req, rs.body = r, b
		rs.n++
		rs.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordingServer) last() (*http.Request, []byte, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.req, rs.body, rs.n
}

// TestSendStdinAndExitCodes: send reads a piped payload when no file is given,
// falls back to the built-in sample when nothing is piped, and answers a
// missing file or a bad port with exit 2 and a hint.
func TestSendStdinAndExitCodes(t *testing.T) {
	t.Parallel()
	rs := newRecordingServer(t)
	dir := t.TempDir()
	piped := `{"zen":"piped <&> in","action":"created"}`

	code, out, errOut := runCmd(t, piped, nil, "send", "--url", rs.URL, "--secret", vectorSecret, "--event", "star")
	if code != exitOK || out != "200 OK\nok\n" {
		t.Fatalf("send with stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	req, body, _ := rs.last()
	if string(body) != piped {
		t.Errorf("sent %q, want the piped payload %q", body, piped)
	}
	if ok, _ := signing.Verify(vectorSecret, body, req.Header.Get("X-Hub-Signature-256")); !ok || req.Header.Get("X-Forge-Event") != "star" {
		t.Errorf("piped payload sent with event %q and a signature that verifies: %v", req.Header.Get("X-Forge-Event"), ok)
	}

	// "-" reads stdin too; nothing piped means the built-in sample.
	if code, _, errOut := runCmd(t, piped, nil, "send", "--url", rs.URL, "--secret", vectorSecret, "--event", "star", "-"); code != exitOK {
		t.Fatalf("send -: exit %d %s", code, errOut)
	}
	if _, body, _ := rs.last(); string(body) != piped {
		t.Errorf("send -: sent %q", body)
	}
	if code, _, errOut := runCmd(t, "", nil, "send", "--url", rs.URL, "--secret", vectorSecret, "--event", "ping"); code != exitOK {
		t.Fatalf("send with empty stdin: exit %d %s", code, errOut)
	}
	if _, body, _ := rs.last(); !strings.Contains(string(body), `"hook_id"`) {
		t.Errorf("with nothing piped, send did not use the ping sample: %.100s", body)
	}

	_, _, before := rs.last()
	tests := []struct {
		name, stdin string
		args        []string
		code        int
		stderr      string
	}{
		{"piped payload without event", piped, []string{"send", "--url", rs.URL, "--secret", "s"}, exitUsage, "--event NAME is required"},
		{"missing file", "", []string{"send", "--url", rs.URL, "--secret", "s", "--event", "ping", filepath.Join(dir, "nope.json")}, exitUsage, "does not exist: give an existing file, or - to read stdin"},
		{"port out of range", "", []string{"send", "--url", "http://127.0.0.1:65536/x", "--secret", "s", "--event", "ping"}, exitUsage, "port 65536 is not a number from 1 to 65535"},
		{"port zero", "", []string{"send", "--url", "http://127.0.0.1:0/x", "--secret", "s", "--event", "ping"}, exitUsage, "port 0 is not a number from 1 to 65535"},
		{"port not a number", "", []string{"send", "--url", "http://127.0.0.1:30o0/x", "--secret", "s", "--event", "ping"}, exitUsage, "a port is 1 to 65535"},
		{"not http", "", []string{"send", "--url", "127.0.0.1:3000/x", "--secret", "s", "--event", "ping"}, exitUsage, "bad --url"},
		{"nothing listening", "", []string{"send", "--url", "http://127.0.0.1:1/x", "--secret", "s", "--event", "ping"}, exitFailure, "is a receiver listening"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tt.stdin, nil, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tt.code, tt.stderr)
			}
		})
	}
	if _, _, n := rs.last(); n != before {
		t.Errorf("%d requests reached the server from failed sends", n-before)
	}
}

// TestSendStdinTerminal: a terminal (a character device) on stdin is never
// read: send takes the sample, sign says to give a payload.
func TestSendStdinTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer null.Close()
	var out, errOut syncBuffer
	c := &cli{stdin: null, stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	if code := run(t.Context(), c, []string{"sign", "--secret", "s"}); code != exitUsage || !strings.Contains(errOut.String(), "pipe it to stdin") {
		t.Errorf("sign with a character device on stdin: exit %d, %q", code, errOut.String())
	}
	rs := newRecordingServer(t)
	if code := run(t.Context(), c, []string{"send", "--url", rs.URL, "--secret", "s", "--event", "ping"}); code != exitOK {
		t.Errorf("send with a character device on stdin: exit %d, %s", code, errOut.String())
	}
}

// TestSendPrint: --print writes the signed request as it would go on the wire,
// and sends nothing.
func TestSendPrint(t *testing.T) {
	t.Parallel()
	rs := newRecordingServer(t)
	payload := `{"zen":"Half measures are as bad as nothing at all."}`
	code, out, errOut := runCmd(t, payload, nil, "send", "--print", "--url", rs.URL+"/api/forge/webhooks", "--secret", vectorSecret, "--event", "ping", "--delivery", "d-print")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, _, n := rs.last(); n != 0 {
		t.Errorf("--print sent %d requests", n)
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(out)))
	if err != nil {
		t.Fatalf("--print output is not an HTTP request: %v\n%s", err, out)
	}
	body, _ := io.ReadAll(req.Body)
	sig := req.Header.Get("X-Hub-Signature-256")
	if ok, _ := signing.Verify(vectorSecret, body, sig); !ok || string(body) != payload {
		t.Errorf("printed body %q with signature %q: want the payload, signed", body, sig)
	}
	if req.Method != "POST" || req.URL.Path != "/api/forge/webhooks" || req.Host != strings.TrimPrefix(rs.URL, "http://") {
		t.Errorf("request line: %s %s, Host %s", req.Method, req.URL, req.Host)
	}
	for name, want := range map[string]string{"X-Forge-Event": "ping", "X-Forge-Delivery": "d-print", "Content-Type": "application/json"} {
		if got := req.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// TestSendWarnsWithoutSubscriber: a delivery to a proxy channel that no relay
// reads is accepted, with a warning; with a relay subscribed, no warning.
func TestSendWarnsWithoutSubscriber(t *testing.T) {
	t.Parallel()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)
	code, _, errOut := runCmd(t, "", nil, "send", "--url", channel, "--secret", testSecret, "--event", "ping")
	if code != exitOK || !strings.Contains(errOut, "the channel has no subscriber") {
		t.Errorf("no subscriber: exit %d, stderr %q; want 0 and a warning", code, errOut)
	}
	rec := newReceived()
	connected := make(chan struct{}, 1)
	start(t, &cli{setup: rec.setup, connected: func() { connected <- struct{}{} }}, "relay", "--source", channel, "--secret", testSecret)
	<-connected
	code, _, errOut = runCmd(t, "", nil, "send", "--url", channel, "--secret", testSecret, "--event", "ping", "--delivery", "heard")
	if code != exitOK || strings.Contains(errOut, "warning") {
		t.Errorf("with a relay: exit %d, stderr %q; want 0 and no warning", code, errOut)
	}
	rec.waitFor(t, "heard")
}

// newChannel asks the proxy at addr for a new channel and returns its URL.
func newChannel(t *testing.T, addr string) string {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get("http://" + addr + "/new")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusTemporaryRedirect || loc == "" {
		t.Fatalf("/new: %s, Location %q", resp.Status, loc)
	}
	return loc
}

// TestProxyNamedChannels: a name /new did not give out is unknown, unless the
// proxy runs with --allow-named-channels.
func TestProxyNamedChannels(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		args := []string{"proxy", "--addr", "127.0.0.1:0"}
		want := http.StatusNotFound
		if allow {
			args = append(args, "--allow-named-channels")
			want = http.StatusOK
		}
		px := start(t, nil, args...)
		resp, err := http.Post("http://"+px.addr+"/my-channel", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("--allow-named-channels %v: POST /my-channel = %s %q, want %d", allow, resp.Status, b, want)
		}
		px.stop()
	}
}
