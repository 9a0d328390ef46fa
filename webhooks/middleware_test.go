package webhooks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

const secret = "forgehooks-test-secret-0123456789"

// logRecords is an slog.Handler that keeps the records, for checking what the
// middleware logs.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
	notify  chan string // receives each message, when set
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	if h.notify != nil {
		h.notify <- r.Message
	}
	return nil
}
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

func (h *logRecords) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.records {
		b.WriteString(r.Level.String() + " " + r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		b.WriteString("\n")
	}
	return b.String()
}

// fixture is a Webhooks behind a real HTTP server on 127.0.0.1.
type fixture struct {
	wh      *Webhooks
	srv     *httptest.Server
	logs    *logRecords
	ran     atomic.Int32 // handler runs
	told    chan *emitter.Error
	release chan struct{} // closed to let "slow" deliveries finish
}

func newFixture(t *testing.T, opts MiddlewareOptions, adjust ...func(*Middleware)) *fixture {
	t.Helper()
	f := &fixture{logs: &logRecords{}, told: make(chan *emitter.Error, 16), release: make(chan struct{})}
	f.wh = mustNew(t, Options{Secret: secret, AdditionalSecrets: []string{"old-secret-0123456789"}, Logger: slog.New(f.logs)})
	f.wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		f.ran.Add(1)
		switch e.Name {
		case "fail":
			return errors.New("handler failed")
		case "fail_twice":
			return errors.New("first failure")
		case "fail_silently":
			return errors.New("")
		case "unprocessable":
			return WithStatus(http.StatusUnprocessableEntity, errors.New("cannot process this"))
		case "bad_status":
			return WithStatus(http.StatusOK, errors.New("not a failure status"))
		case "panic":
			panic("handler exploded")
		case "slow":
			<-f.release
		}
		return nil
	})
	f.wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		if e.Name == "fail_twice" {
			return errors.New("second failure")
		}
		return nil
	})
	f.wh.OnError(func(ctx context.Context, err *emitter.Error) { f.told <- err })
	mw := NewMiddleware(f.wh, opts)
	for _, a := range adjust {
		a(mw)
	}
	f.srv = httptest.NewServer(mw)
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.srv.Close()
	})
	return f
}

// req describes a request; zero fields take valid defaults.
type req struct {
	method   string
	path     string
	header   http.Header // replaces the defaults of the names it holds
	body     string
	signWith string // secret; "" signs with the primary one, "-" leaves the signature header alone
	chunked  bool
}

func (f *fixture) do(t *testing.T, rq req) (*http.Response, string) {
	t.Helper()
	method, path, body := rq.method, rq.path, rq.body
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = DefaultPath
	}
	if body == "" {
		body = `{"action":"opened","zen":"ok"}`
	}
	var rd io.Reader = strings.NewReader(body)
	if rq.chunked {
		rd = io.MultiReader(rd) // hides the length: sent chunked
	}
	r, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, "issues")
	r.Header.Set(HeaderDelivery, "d-1")
	if rq.signWith != "-" {
		s := rq.signWith
		if s == "" {
			s = secret
		}
		r.Header.Set(HeaderSignature, sign(t, s, []byte(body)))
	}
	for k, vs := range rq.header {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	res, err := f.srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<absent>" {
			h[http.CanonicalHeaderKey(kv[i])] = nil
			continue
		}
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestMiddlewareEndToEnd(t *testing.T) {
	expose := MiddlewareOptions{ExposeHandlerErrors: true}
	const (
		jsonCT = "application/json"
		textCT = "text/plain; charset=utf-8"
	)
	tests := []struct {
		name     string
		opts     MiddlewareOptions
		req      req
		status   int
		body     string
		ctype    string
		ran      int32 // handler runs (two OnAny handlers per dispatched delivery)
		told     bool  // error handlers told
		logLevel string
		logWhy   string
	}{
		{name: "ok", req: req{}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "trailing slash", req: req{path: DefaultPath + "/"}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "query ignored", req: req{path: DefaultPath + "?x=1"}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "percent-encoded letter", req: req{path: "/api/forge/web%68ooks"}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "custom path", opts: MiddlewareOptions{Path: "hooks/"}, req: req{path: "/hooks"}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "additional secret", req: req{signWith: "old-secret-0123456789"}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "media type in capitals with parameters", req: req{header: hdr("Content-Type", "Application/JSON; charset=UTF-8")}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "chunked body", req: req{chunked: true}, status: 200, body: "ok\n", ctype: textCT, ran: 1},
		{name: "unknown event name", req: req{header: hdr(HeaderEvent, "brand_new_event")}, status: 200, body: "ok\n", ctype: textCT, ran: 1},

		{name: "other path", req: req{path: "/x?y=1"}, status: 404, body: `{"error":"Unknown route: POST /x?y=1"}`, ctype: jsonCT, logLevel: "WARN", logWhy: "path is not MiddlewareOptions.Path"},
		{name: "prefix of the path", req: req{path: "/api/forge"}, status: 404, body: `{"error":"Unknown route: POST /api/forge"}`, ctype: jsonCT},
		{name: "path with a suffix", req: req{path: DefaultPath + "x"}, status: 404, body: `{"error":"Unknown route: POST /api/forge/webhooksx"}`, ctype: jsonCT},
		{name: "encoded slash", req: req{path: "/api/forge%2Fwebhooks"}, status: 404, body: `{"error":"Unknown route: POST /api/forge%2Fwebhooks"}`, ctype: jsonCT},
		{name: "dot-dot not cleaned", req: req{path: "/api/forge/x/../webhooks"}, status: 404, body: `{"error":"Unknown route: POST /api/forge/x/../webhooks"}`, ctype: jsonCT},
		{name: "double slash not cleaned", req: req{path: "/api//forge/webhooks"}, status: 404, body: `{"error":"Unknown route: POST /api//forge/webhooks"}`, ctype: jsonCT},
		{name: "GET", req: req{method: "GET"}, status: 404, body: `{"error":"Unknown route: GET /api/forge/webhooks"}`, ctype: jsonCT, logLevel: "INFO", logWhy: "method is not POST"},
		{name: "PUT with query", req: req{method: "PUT", path: DefaultPath + "?a=b"}, status: 404, body: `{"error":"Unknown route: PUT /api/forge/webhooks?a=b"}`, ctype: jsonCT},

		{name: "form content type", req: req{header: hdr("Content-Type", "application/x-www-form-urlencoded")}, status: 415, body: `{"error":"Unsupported \"Content-Type\" header value. Must be \"application/json\""}`, ctype: jsonCT, logLevel: "WARN", logWhy: "content type"},
		{name: "no content type", req: req{header: hdr("Content-Type", "<absent>")}, status: 415, ctype: jsonCT},
		{name: "malformed content type", req: req{header: hdr("Content-Type", "application/json; =x")}, status: 415, ctype: jsonCT},
		{name: "json suffix is not json", req: req{header: hdr("Content-Type", "application/vnd.forge+json")}, status: 415, ctype: jsonCT},
		{name: "content type twice", req: req{header: hdr("Content-Type", "application/json", "Content-Type", "text/plain")}, status: 415, ctype: jsonCT},
		{name: "content type checked before headers", req: req{header: hdr("Content-Type", "text/plain", HeaderEvent, "<absent>")}, status: 415, ctype: jsonCT},

		{name: "all headers missing", req: req{signWith: "-", header: hdr(HeaderEvent, "<absent>", HeaderDelivery, "<absent>")}, status: 400, body: `{"error":"Required headers missing: x-forge-event, x-hub-signature-256, x-forge-delivery"}`, ctype: jsonCT, logLevel: "WARN", logWhy: "required headers missing"},
		{name: "signature missing", req: req{signWith: "-"}, status: 400, body: `{"error":"Required headers missing: x-hub-signature-256"}`, ctype: jsonCT},
		{name: "event empty, delivery missing", req: req{header: hdr(HeaderEvent, "", HeaderDelivery, "<absent>")}, status: 400, body: `{"error":"Required headers missing: x-forge-event, x-forge-delivery"}`, ctype: jsonCT},
		{name: "event repeated", req: req{header: hdr(HeaderEvent, "issues", HeaderEvent, "push")}, status: 400, body: `{"error":"Headers sent more than once, ambiguous: x-forge-event"}`, ctype: jsonCT},
		{name: "delivery repeated with the same value", req: req{header: hdr(HeaderDelivery, "d", HeaderDelivery, "d")}, status: 400, body: `{"error":"Headers sent more than once, ambiguous: x-forge-delivery"}`, ctype: jsonCT},

		{name: "over the limit by Content-Length", opts: MiddlewareOptions{MaxBodyBytes: 16}, req: req{}, status: 413, body: `{"error":"Payload too large: the limit is 16 bytes"}`, ctype: jsonCT, logLevel: "WARN", logWhy: "body too large"},
		{name: "over the limit, chunked", opts: MiddlewareOptions{MaxBodyBytes: 16}, req: req{chunked: true}, status: 413, ctype: jsonCT},
		{name: "at the limit", opts: MiddlewareOptions{MaxBodyBytes: 2}, req: req{body: `{}`}, status: 200, body: "ok\n", ran: 1},
		{name: "at the limit, chunked", opts: MiddlewareOptions{MaxBodyBytes: 2}, req: req{body: `{}`, chunked: true}, status: 200, body: "ok\n", ran: 1},

		{name: "wrong secret", req: req{signWith: "wrong"}, status: 400, body: `{"error":"signature does not match event payload and secret"}`, ctype: jsonCT, told: true, logLevel: "WARN", logWhy: "signature mismatch"},
		{name: "malformed signature", req: req{signWith: "-", header: hdr(HeaderSignature, "sha256=abc")}, status: 400, body: `{"error":"signature does not match event payload and secret"}`, told: true},
		{name: "sha1 signature", req: req{signWith: "-", header: hdr(HeaderSignature, "sha1=0123456789012345678901234567890123456789")}, status: 400, told: true},

		{name: "invalid JSON", req: req{body: `{"a":`}, status: 400, ctype: jsonCT, logLevel: "WARN", logWhy: "invalid payload"},
		{name: "array", req: req{body: `[{"action":"opened"}]`}, status: 400, ctype: jsonCT},
		{name: "null", req: req{body: `null`}, status: 400, ctype: jsonCT},
		{name: "string", req: req{body: `"x"`}, status: 400, ctype: jsonCT},

		{name: "handler fails", req: req{header: hdr(HeaderEvent, "fail")}, status: 500, body: `{"error":"handler failed; the receiver's log has the details"}`, ctype: jsonCT, ran: 1, told: true, logLevel: "ERROR", logWhy: "handlers failed"},
		{name: "handler fails, exposed", opts: expose, req: req{header: hdr(HeaderEvent, "fail")}, status: 500, body: `{"error":"handler failed"}`, ctype: jsonCT, ran: 1, told: true, logLevel: "ERROR", logWhy: "handlers failed"},
		{name: "error without a message", opts: expose, req: req{header: hdr(HeaderEvent, "fail_silently")}, status: 500, body: `{"error":"handler failed without a message"}`, ctype: jsonCT, ran: 1, told: true},
		{name: "first error's message", opts: expose, req: req{header: hdr(HeaderEvent, "fail_twice")}, status: 500, body: `{"error":"first failure"}`, ctype: jsonCT, ran: 1, told: true},
		{name: "handler panics", req: req{header: hdr(HeaderEvent, "panic")}, status: 500, body: `{"error":"handler failed; the receiver's log has the details"}`, ctype: jsonCT, ran: 1, told: true},
		{name: "handler panics, exposed", opts: expose, req: req{header: hdr(HeaderEvent, "panic")}, status: 500, body: `{"error":"emitter: handler panicked: handler exploded"}`, ctype: jsonCT, ran: 1, told: true},
		{name: "error with HTTPStatus", req: req{header: hdr(HeaderEvent, "unprocessable")}, status: 422, body: `{"error":"cannot process this"}`, ctype: jsonCT, ran: 1, told: true},
		{name: "HTTPStatus outside 4xx-5xx ignored", req: req{header: hdr(HeaderEvent, "bad_status")}, status: 500, body: `{"error":"not a failure status"}`, ran: 1, told: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts)
			res, body := f.do(t, tt.req)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tt.status, body)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if ct := res.Header.Get("Content-Type"); tt.ctype != "" && ct != tt.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
			if tt.status >= 400 && !strings.HasPrefix(body, `{"error":"`) {
				t.Errorf("error body %q is not a JSON error", body)
			}
			f.wh.Close(context.Background())
			if got := f.ran.Load(); got != tt.ran {
				t.Errorf("handler ran %d times, want %d", got, tt.ran)
			}
			if told := len(f.told) > 0; told != tt.told {
				t.Errorf("error handlers told = %v, want %v", told, tt.told)
			}
			if tt.logWhy != "" {
				logs := f.logs.text()
				if !strings.Contains(logs, tt.logLevel+" ") || !strings.Contains(logs, tt.logWhy) {
					t.Errorf("log lacks %s %q:\n%s", tt.logLevel, tt.logWhy, logs)
				}
			}
		})
	}
}

func TestMiddlewareTimeout(t *testing.T) {
	f := newFixture(t, MiddlewareOptions{Timeout: 1}) // 1ns: the handler is always still running
	var finished atomic.Bool
	handlerCtxErr := make(chan error, 1)
	started := make(chan struct{})
	f.wh.On("slow", func(ctx context.Context, e emitter.Event) error {
		close(started)
		<-f.release
		handlerCtxErr <- ctx.Err()
		finished.Store(true)
		return nil
	})
	res, body := f.do(t, req{header: hdr(HeaderEvent, "slow")})
	if res.StatusCode != http.StatusAccepted || body != "still processing\n" || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("got %d %q %q", res.StatusCode, body, res.Header.Get("Content-Type"))
	}
	// The 202 may come before the handler starts (a Close whose context has
	// ended keeps it from starting at all); once it is blocked, a Close that
	// must not wait reports so.
	<-started
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.wh.Close(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled) = %v while a handler outlives its request", err)
	}
	closed := make(chan bool)
	go func() {
		f.wh.Close(context.Background())
		closed <- finished.Load()
	}()
	close(f.release)
	if !<-closed {
		t.Fatal("Close returned before the handlers that outlived the request")
	}
	if err := <-handlerCtxErr; err != nil {
		t.Errorf("handler's context was cancelled: %v", err)
	}
	if !strings.Contains(f.logs.text(), "still running") {
		t.Errorf("202 not logged:\n%s", f.logs.text())
	}
}

func TestMiddlewareClosed(t *testing.T) {
	f := newFixture(t, MiddlewareOptions{})
	f.wh.Close(context.Background())
	res, body := f.do(t, req{})
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "Shutting down") {
		t.Fatalf("after Close: %d %q", res.StatusCode, body)
	}
}

// writeSpy records whether anything was written.
type writeSpy struct {
	header http.Header
	wrote  bool
}

func (w *writeSpy) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}
func (w *writeSpy) Write(b []byte) (int, error) { w.wrote = true; return len(b), nil }
func (w *writeSpy) WriteHeader(int)             { w.wrote = true }

func TestHandleAndWrap(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	m := NewMiddleware(wh, MiddlewareOptions{})
	tests := []struct {
		target  string
		handled bool
	}{
		{DefaultPath, true},
		{DefaultPath + "//?q", true},
		{"/", false},
		{"/api/forge/webhook", false},
		{"/API/forge/webhooks", false},
		{"/api/forge/webhooks/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			var spy writeSpy
			r := httptest.NewRequest(http.MethodGet, tt.target, nil)
			if got := m.Handle(&spy, r); got != tt.handled {
				t.Fatalf("Handle = %v, want %v", got, tt.handled)
			}
			if spy.wrote != tt.handled || len(spy.header) > 0 && !tt.handled {
				t.Errorf("wrote = %v, header %v; want a write only when handled", spy.wrote, spy.header)
			}
			nextRan := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { nextRan = true })
			rec := httptest.NewRecorder()
			m.Wrap(next).ServeHTTP(rec, r)
			if nextRan == tt.handled {
				t.Errorf("next ran = %v", nextRan)
			}
			rec = httptest.NewRecorder()
			m.Wrap(nil).ServeHTTP(rec, r)
			if rec.Code != http.StatusNotFound {
				t.Errorf("Wrap(nil): %d", rec.Code)
			}
		})
	}
	// A hand-built request without RequestURI still gets its route named.
	r := &http.Request{Method: "GET", URL: mustURL(t, "http://h/elsewhere?a=1"), Header: http.Header{}}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, r)
	if rec.Code != 404 || rec.Body.String() != `{"error":"Unknown route: GET /elsewhere?a=1"}` {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

func TestNewMiddlewarePanicsOnNil(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "nil *Webhooks") {
			t.Fatalf("panic = %v", r)
		}
	}()
	NewMiddleware(nil, MiddlewareOptions{})
}

// errReader fails after some bytes, as a client that goes away mid-body.
type errReader struct{ n int }

func (r *errReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = ' '
	}
	r.n -= n
	return n, nil
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestIsJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/json ;charset=UTF-8", true},
		{"", false},
		{"application/json-patch+json", false},
		{"application/x-www-form-urlencoded", false},
		{"text/json", false},
		{"application/json; charset", false}, // a parameter without a value does not parse
		{"application/", false},
	} {
		if got := isJSON(tc.in); got != tc.want {
			t.Errorf("isJSON(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
