package relay

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testTimeout bounds every test that runs a relay, so that a relay that hangs
// fails the test instead.
const testTimeout = 20 * time.Second

func TestParseMessage(t *testing.T) {
	exact := `{"a":"<&>",  "b" : 1.50}`
	b64 := base64.StdEncoding.EncodeToString([]byte(exact))
	tests := []struct {
		name       string
		data       string
		wantErr    bool
		body       string
		source     string
		origLen    int64
		reserial   bool
		wantHeader http.Header
	}{
		{name: "bodyB wins", data: `{"x-forge-event":"push","body":{"a":1},"rawBody":"no","bodyB":"` + b64 + `"}`,
			body: exact, source: "bodyB", origLen: -1, wantHeader: http.Header{"X-Forge-Event": {"push"}}},
		{name: "rawBody next", data: `{"body":{"a":1},"rawBody":` + quote(exact) + `}`, body: exact, source: "rawBody", origLen: -1, wantHeader: http.Header{}},
		{name: "body bytes as they stand", data: `{"content-length":"24","body":` + exact + `}`, body: exact, source: "body", origLen: 24,
			wantHeader: http.Header{"Content-Length": {"24"}}},
		{name: "body shorter than the original: re-serialised", data: `{"content-length":"99","body":{"a":1}}`, body: `{"a":1}`, source: "body", origLen: 99, reserial: true,
			wantHeader: http.Header{"Content-Length": {"99"}}},
		{name: "null bodyB falls back", data: `{"bodyB":null,"body":[1]}`, body: `[1]`, source: "body", origLen: -1, wantHeader: http.Header{}},
		{name: "headers that cannot be headers are left out", data: `{"x-n":5,"bad name":"v","x-crlf":"a\r\nb","x-ok":"v","body":{}}`, body: `{}`, source: "body", origLen: -1,
			wantHeader: http.Header{"X-Ok": {"v"}}},
		{name: "not an object", data: `[1,2]`, wantErr: true},
		{name: "not JSON", data: `{"body":`, wantErr: true},
		{name: "no body", data: `{"x-forge-event":"push"}`, wantErr: true},
		{name: "bodyB not base64", data: `{"bodyB":"***"}`, wantErr: true},
		{name: "bodyB unpadded", data: `{"bodyB":"e30"}`, wantErr: true},
		{name: "bodyB not a string", data: `{"bodyB":5}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMessage([]byte(tt.data))
			if tt.wantErr {
				if !errors.Is(err, ErrBadMessage) {
					t.Fatalf("err = %v, want ErrBadMessage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Body) != tt.body || m.BodySource != tt.source || m.OriginalLength != tt.origLen || m.Reserialized() != tt.reserial {
				t.Errorf("got body %q from %s, original length %d, reserialized %v", m.Body, m.BodySource, m.OriginalLength, m.Reserialized())
			}
			if diff := cmp.Diff(tt.wantHeader, m.Header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
		})
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func TestMessageFields(t *testing.T) {
	m, err := ParseMessage([]byte(`{"x-request-id":"r1","x-forge-event":"issues","query":{"a":"1","b":["2","3"],"c":5},"timestamp":1700000000123,"body":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.DeliveryID() != "r1" || m.Event() != "issues" {
		t.Errorf("DeliveryID %q Event %q", m.DeliveryID(), m.Event())
	}
	if diff := cmp.Diff(url.Values{"a": {"1"}, "b": {"2", "3"}}, m.Query); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if !m.Timestamp.Equal(time.UnixMilli(1700000000123)) {
		t.Errorf("timestamp %v", m.Timestamp)
	}
	m.Header.Set("X-Forge-Delivery", "d1")
	if m.DeliveryID() != "d1" {
		t.Errorf("the forge's delivery header does not win: %q", m.DeliveryID())
	}
	if err := m.ReserializedError(); !errors.Is(err, ErrReserialized) || !strings.Contains(err.Error(), "bodyB") {
		t.Errorf("ReserializedError = %v", err)
	}
}

func TestSignatureHeader(t *testing.T) {
	tests := []struct {
		name      string
		header    http.Header
		allowSHA1 bool
		want      string
		wantSHA1  bool
	}{
		{"sha256", http.Header{"X-Hub-Signature-256": {"sha256=a"}, "X-Hub-Signature": {"sha1=b"}}, true, "sha256=a", false},
		{"sha1 ignored unless opted in", http.Header{"X-Hub-Signature": {"sha1=b"}}, false, "", false},
		{"sha1 when opted in and sha256 absent", http.Header{"X-Hub-Signature": {"sha1=b"}}, true, "sha1=b", true},
		{"none", http.Header{}, true, "", false},
	}
	for _, tt := range tests {
		m := &Message{Header: tt.header}
		if sig, sha1 := m.Signature(tt.allowSHA1); sig != tt.want || sha1 != tt.wantSHA1 {
			t.Errorf("%s: Signature = %q, %v; want %q, %v", tt.name, sig, sha1, tt.want, tt.wantSHA1)
		}
	}
}

func TestBackoff(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	tests := []struct {
		n            int
		retry, limit time.Duration
		u            float64
		want         time.Duration
	}{
		{0, s, 30 * s, 0, s},
		{1, s, 30 * s, 0, 2 * s},
		{4, s, 30 * s, 0, 16 * s},
		{5, s, 30 * s, 0, 30 * s},
		{60, s, 30 * s, 0, 30 * s}, // no overflow
		{0, s, 30 * s, 0.5, 750 * ms},
		{3, s, 30 * s, 0.999999, 4 * s},  // half of 8 s, nearly
		{0, 10 * ms, 30 * s, 0, 10 * ms}, // the stream's retry is honoured
		{2, 60 * s, 30 * s, 0, 60 * s},   // a retry above the cap still wins
	}
	for _, tt := range tests {
		got := Backoff(tt.n, tt.retry, tt.limit, tt.u)
		if got.Round(ms) != tt.want {
			t.Errorf("Backoff(%d, %v, %v, %v) = %v, want %v", tt.n, tt.retry, tt.limit, tt.u, got, tt.want)
		}
	}
}

func TestForward(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "queued")
	}))
	defer target.Close()
	body := "{\"pretty\": true}\r\n"
	m := &Message{
		Header: http.Header{
			"X-Forge-Event": {"ping"}, "Content-Type": {"application/json"}, "User-Agent": {"Forge-Hookshot/1"},
			"X-Forge-Delivery": {"d1"}, "X-Hub-Signature-256": {"sha256=00"}, "X-Forge-Hook-Id": {"7"}, "X-Hub-Signature": {"sha1=00"},
			"Host": {"proxy.example"}, "Content-Length": {"999"}, "Connection": {"X-Secret-Hop"}, "X-Secret-Hop": {"1"},
			"Transfer-Encoding": {"chunked"}, "Authorization": {"Bearer stolen"}, "Cookie": {"session=1"},
			"X-Forwarded-For": {"10.0.0.1"}, "Forwarded": {"for=10.0.0.1"}, "X-Real-Ip": {"10.0.0.1"}, "Accept": {"*/*"},
		},
		Body:  []byte(body),
		Query: url.Values{"q": {"v"}},
	}
	res, err := Forward(context.Background(), target.Client(), target.URL+"/hook?keep=1", m)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 202 || string(res.Body) != "queued" || !res.OK() {
		t.Errorf("result %+v", res)
	}
	if string(gotBody) != body {
		t.Errorf("body %q, want %q", gotBody, body)
	}
	if got.URL.Path != "/hook" || got.URL.RawQuery != "keep=1" {
		t.Errorf("URL %v: want the target's own, without the channel's query", got.URL)
	}
	want := http.Header{
		"X-Forge-Event": {"ping"}, "Content-Type": {"application/json"}, "User-Agent": {"Forge-Hookshot/1"},
		"X-Forge-Delivery": {"d1"}, "X-Hub-Signature-256": {"sha256=00"}, "X-Forge-Hook-Id": {"7"}, "X-Hub-Signature": {"sha1=00"},
		"Content-Length": {fmt.Sprint(len(body))}, "Accept-Encoding": {"gzip"}, // set by Go's transport
	}
	if diff := cmp.Diff(want, got.Header); diff != "" {
		t.Errorf("headers at the target (-want +got):\n%s", diff)
	}
	if got.Host == "proxy.example" || got.ContentLength != int64(len(body)) {
		t.Errorf("Host %q, Content-Length %d: taken from the message", got.Host, got.ContentLength)
	}
}

func TestForwardHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"content-type": true, "User-Agent": true, "x-forge-event": true, "X-Forge-Delivery": true,
		"X-Hub-Signature-256": true, "x-forge-hook-installation-target-id": true,
		"Authorization": false, "Cookie": false, "X-Forwarded-For": false, "Host": false, "Content-Length": false,
		"X-Forged": false, "X-Hubris": false, "Accept": false,
	} {
		if got := ForwardHeader(name); got != want {
			t.Errorf("ForwardHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// fakeSource serves scripted streams: the i-th connection gets script(i).
type fakeSource struct {
	mu      sync.Mutex
	lastIDs []string // the Last-Event-ID of each connection
	script  func(i int, w http.ResponseWriter, r *http.Request)
}

func (f *fakeSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	i := len(f.lastIDs)
	f.lastIDs = append(f.lastIDs, r.Header.Get("Last-Event-ID"))
	f.mu.Unlock()
	f.script(i, w, r)
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
}

// collect runs Run until want deliveries were handled, and returns them with the
// reconnection delays Run asked for.
func collect(t *testing.T, opts Options, want int) ([]*Message, []time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var got []*Message
	var delays []time.Duration
	opts.Handle = func(_ context.Context, m *Message) error {
		got = append(got, m)
		if len(got) == want {
			cancel()
		}
		return nil
	}
	opts.wait = func(ctx context.Context, d time.Duration) bool {
		delays = append(delays, d)
		return ctx.Err() == nil
	}
	err := Run(ctx, opts)
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("relay did not get %d deliveries in time (got %d)", want, len(got))
	}
	return got, delays, err
}

func TestRunReconnectsWithLastEventIDAndRetry(t *testing.T) {
	src := &fakeSource{script: func(i int, w http.ResponseWriter, r *http.Request) {
		switch i {
		case 0:
			sseHeader(w)
			io.WriteString(w, "retry: 10\nevent: ready\ndata: {}\n\n: keep-alive\nevent: ping\ndata: {}\n\nid: 5\ndata: {\"body\":{\"n\":1}}\n\n")
			// and the stream ends
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable) // the proxy is restarting
		default:
			sseHeader(w)
			io.WriteString(w, "event: ready\ndata: {}\n\nid: 6\ndata: {\"body\":{\"n\":2}}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}}
	ts := httptest.NewServer(src)
	defer ts.Close()
	got, delays, err := collect(t, Options{Source: ts.URL}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var bodies, ids []string
	for _, m := range got {
		bodies = append(bodies, string(m.Body))
		ids = append(ids, m.EventID)
	}
	if diff := cmp.Diff([]string{`{"n":1}`, `{"n":2}`}, bodies); diff != "" {
		t.Errorf("handled (-want +got); ready and ping must not reach the handler:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"5", "6"}, ids); diff != "" {
		t.Errorf("event ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "5", "5"}, src.lastIDs); diff != "" {
		t.Errorf("Last-Event-ID sent (-want +got):\n%s", diff)
	}
	// retry: 10 sets the first delay (jittered down by up to half); the failed
	// attempt after it doubles it.
	if len(delays) != 2 || delays[0] > 10*time.Millisecond || delays[0] < 5*time.Millisecond ||
		delays[1] > 20*time.Millisecond || delays[1] < 10*time.Millisecond {
		t.Errorf("delays %v, want about 10ms then 20ms", delays)
	}
}

func TestRunPermanentErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    error
		says    string
	}{
		{"web page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>")
		}, ErrNotEventStream, "not text/event-stream"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, ErrRejected, "404 Not Found (404 page not found)"},
		{"answer text cut to one line", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "unknown channel\x1b[31m: open /new\nsecond line", http.StatusNotFound)
		}, ErrRejected, "(unknown channel[31m: open /new): check"},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, ErrRejected, "needs its read token"},
		{"no content", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, ErrRejected, "204"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(tt.handler)
			defer ts.Close()
			_, _, err := collect(t, Options{Source: ts.URL}, 1)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Run = %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
}

func TestRunSkipsBadAndOversizedEvents(t *testing.T) {
	src := &fakeSource{script: func(i int, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		io.WriteString(w, "id: 1\ndata: not json\n\n")
		io.WriteString(w, "id: 2\ndata: {\"body\":\""+strings.Repeat("x", 500)+"\"}\n\n")
		io.WriteString(w, "id: 3\ndata: {\"body\":{\"ok\":true}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}}
	ts := httptest.NewServer(src)
	defer ts.Close()
	got, _, err := collect(t, Options{Source: ts.URL, MaxEventBytes: 256}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0].Body) != `{"ok":true}` || got[0].EventID != "3" {
		t.Errorf("got %q id %q", got[0].Body, got[0].EventID)
	}
}

func TestRunReconnectsAfterIdleTimeout(t *testing.T) {
	src := &fakeSource{script: func(i int, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		if i == 0 {
			io.WriteString(w, "event: ready\ndata: {}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // silent: no keep-alive
			return
		}
		io.WriteString(w, "data: {\"body\":{}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}}
	ts := httptest.NewServer(src)
	defer ts.Close()
	if _, _, err := collect(t, Options{Source: ts.URL, IdleTimeout: 50 * time.Millisecond}, 1); err != nil {
		t.Fatal(err)
	}
	if len(src.lastIDs) < 2 {
		t.Errorf("the silent stream was not reopened")
	}
}

func TestRunNeedsHandler(t *testing.T) {
	if err := Run(context.Background(), Options{Source: "http://127.0.0.1:1/x"}); err == nil {
		t.Error("Run without a handler did not fail")
	}
}

func TestRunReconnectsWhenNoAnswer(t *testing.T) {
	src := &fakeSource{script: func(i int, w http.ResponseWriter, r *http.Request) {
		if i == 0 {
			<-r.Context().Done() // accepts, never answers
			return
		}
		sseHeader(w)
		io.WriteString(w, "data: {\"body\":{}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}}
	ts := httptest.NewServer(src)
	defer ts.Close()
	if _, _, err := collect(t, Options{Source: ts.URL, IdleTimeout: 50 * time.Millisecond}, 1); err != nil {
		t.Fatal(err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://p/ch":                    "http://p/ch",
		"http://p/ch?token=s3cret":       "http://p/ch?token=REDACTED",
		"http://p/ch?a=1&token=s3cret":   "http://p/ch?a=1&token=REDACTED",
		"http://p/ch?token=a&token=b":    "http://p/ch?token=REDACTED",
		"http://p/ch?tokens=kept":        "http://p/ch?tokens=kept",
		"::not a url?token=s3cret":       "::not a url?REDACTED",
		"http://p/ch?token=&other=value": "http://p/ch?other=value&token=REDACTED",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
