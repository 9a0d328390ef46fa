package webhookstest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

const secret = "webhookstest secret"

var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestNewRequestHeaders checks every header of a request against what the
// forge sends, and both signatures with package signing.
func TestNewRequestHeaders(t *testing.T) {
	body := webhookstest.Payload("issues.opened")
	req := webhookstest.NewRequest(t, secret, "issues", body)

	if req.Method != http.MethodPost || req.URL.Path != webhooks.DefaultPath {
		t.Errorf("request is %s %s, want POST %s", req.Method, req.URL.Path, webhooks.DefaultPath)
	}
	want := map[string]string{
		"Content-Type":                          "application/json",
		"User-Agent":                            webhookstest.UserAgent,
		"X-Forge-Event":                         "issues",
		"X-Forge-Hook-ID":                       webhookstest.HookID,
		"X-Forge-Hook-Installation-Target-Type": "repository",
	}
	for k, v := range want {
		if got := req.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !strings.HasPrefix(webhookstest.UserAgent, "Forge-Hookshot/") {
		t.Errorf("UserAgent %q is not of the forge's form", webhookstest.UserAgent)
	}
	if id := req.Header.Get(webhooks.HeaderDelivery); !uuidForm.MatchString(id) {
		t.Errorf("delivery id %q is not a version 4 UUID", id)
	}
	if got := req.Header.Get(webhookstest.HeaderTargetID); got == "" || strings.Trim(got, "0123456789") != "" {
		t.Errorf("target id %q is not a number", got)
	}
	if ok, err := signing.Verify(secret, body, req.Header.Get(webhooks.HeaderSignature)); !ok || err != nil {
		t.Errorf("X-Hub-Signature-256 does not verify: %v %v", ok, err)
	}
	if ok, err := signing.VerifySHA1(secret, body, req.Header.Get(webhookstest.HeaderSignatureSHA1)); !ok || err != nil {
		t.Errorf("X-Hub-Signature does not verify: %v %v", ok, err)
	}
	if got := webhookstest.Sign(t, secret, body); got != req.Header.Get(webhooks.HeaderSignature) {
		t.Errorf("Sign = %q, the request's signature is %q", got, req.Header.Get(webhooks.HeaderSignature))
	}
	got, _ := io.ReadAll(req.Body)
	if !bytes.Equal(got, body) {
		t.Error("the request's body is not the payload")
	}
	if req.ContentLength != int64(len(body)) {
		t.Errorf("ContentLength %d, want %d", req.ContentLength, len(body))
	}

	other := webhookstest.NewRequest(t, secret, "issues", body)
	if other.Header.Get(webhooks.HeaderDelivery) == req.Header.Get(webhooks.HeaderDelivery) {
		t.Error("two requests have the same delivery id")
	}
}

// TestNewRequestTarget: the installation target headers name the payload's
// repository, else its organization, else an app.
func TestNewRequestTarget(t *testing.T) {
	for _, tc := range []struct {
		payload, typ, id string
	}{
		{`{"repository":{"id":35129377},"organization":{"id":6}}`, "repository", "35129377"},
		{`{"organization":{"id":6},"sender":{"id":7}}`, "organization", "6"},
		{`{"repository":{"id":"x"},"organization":{"id":6}}`, "organization", "6"},
		{`{"installation":{"id":3}}`, "integration", webhookstest.HookID},
		{`[1,2]`, "integration", webhookstest.HookID},
		{`not json`, "integration", webhookstest.HookID},
	} {
		req := webhookstest.NewRequest(t, secret, "x", []byte(tc.payload))
		if typ, id := req.Header.Get(webhookstest.HeaderTargetType), req.Header.Get(webhookstest.HeaderTargetID); typ != tc.typ || id != tc.id {
			t.Errorf("%s: target %s %s, want %s %s", tc.payload, typ, id, tc.typ, tc.id)
		}
	}
}

// TestNewRequestOptions checks each option on the request it makes.
func TestNewRequestOptions(t *testing.T) {
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	req := webhookstest.NewRequest(t, secret, "ping", body,
		webhookstest.WithPath("/t/acme/hooks?x=1"),
		webhookstest.WithDeliveryID("d-1"),
		webhookstest.WithHeader("X-Extra", "yes"),
		webhookstest.WithHeader(webhookstest.HeaderSignatureSHA1, ""),
	)
	if req.URL.Path != "/t/acme/hooks" || req.URL.Query().Get("x") != "1" || req.RequestURI != "/t/acme/hooks?x=1" {
		t.Errorf("URL %s (RequestURI %s), want /t/acme/hooks?x=1", req.URL, req.RequestURI)
	}
	if got := req.Header.Get(webhooks.HeaderDelivery); got != "d-1" {
		t.Errorf("delivery id %q, want d-1", got)
	}
	if got := req.Header.Get("X-Extra"); got != "yes" {
		t.Errorf("X-Extra %q, want yes", got)
	}
	if _, ok := req.Header[webhookstest.HeaderSignatureSHA1]; ok {
		t.Error("WithHeader with an empty value did not remove the header")
	}
	abs := webhookstest.NewRequest(t, secret, "ping", body, webhookstest.WithPath("https://hooks.example/in"))
	if abs.Host != "hooks.example" || abs.URL.Path != "/in" || abs.TLS == nil {
		t.Errorf("absolute URL: host %q path %q TLS %v", abs.Host, abs.URL.Path, abs.TLS != nil)
	}
}

// TestNewRequestMisuse: an empty secret or payload fails the test with the
// reason, as a helper of package testing does.
func TestNewRequestMisuse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  string
		payload []byte
		want    error
	}{
		{"no secret", "", []byte(`{}`), signing.ErrMissingSecret},
		{"no payload", secret, nil, signing.ErrMissingPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range map[string]func(testing.TB){
				"NewRequest": func(tb testing.TB) { webhookstest.NewRequest(tb, tc.secret, "ping", tc.payload) },
				"Sign":       func(tb testing.TB) { webhookstest.Sign(tb, tc.secret, tc.payload) },
			} {
				rec := &fatalRecorder{TB: t}
				runFatal(rec, call)
				if !rec.failed || !strings.Contains(rec.msg, "webhookstest."+name) || !strings.Contains(rec.msg, tc.want.Error()) {
					t.Errorf("%s: failed %v with %q, want a failure naming %s and %q", name, rec.failed, rec.msg, name, tc.want)
				}
			}
		})
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
	panic(errFatal)
}
func (r *fatalRecorder) Fatal(args ...any) {
	r.failed = true
	r.msg = fmt.Sprint(args...)
	panic(errFatal)
}

var errFatal = errors.New("fatal")

func runFatal(tb testing.TB, f func(testing.TB)) {
	defer func() {
		if p := recover(); p != nil && p != errFatal {
			panic(p)
		}
	}()
	f(tb)
}

// receiver is a real Webhooks behind a real middleware, recording what its
// handlers and OnResult see.
type receiver struct {
	mw      *webhooks.Middleware
	mu      sync.Mutex
	events  []emitter.Event
	infos   []webhooks.Delivery
	results []webhooks.Result
}

func newReceiver(t *testing.T, opts webhooks.MiddlewareOptions) *receiver {
	t.Helper()
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close(context.Background()) })
	r := &receiver{}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		r.mu.Lock()
		defer r.mu.Unlock()
		e.Payload = bytes.Clone(e.Payload)
		r.events = append(r.events, e)
		r.infos = append(r.infos, info)
		if e.Action() == "deleted" {
			return errors.New("cannot handle deletions")
		}
		return nil
	})
	opts.OnResult = func(res webhooks.Result) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.results = append(r.results, res)
	}
	r.mw = webhooks.NewMiddleware(wh, opts)
	return r
}

// TestDeliverToMiddleware delivers requests of NewRequest to a real
// middleware: a good one is handled, and each spoiled one is answered as the
// HTTP contract says, with no handler run.
func TestDeliverToMiddleware(t *testing.T) {
	body := webhookstest.Payload("issues.opened")
	for _, tc := range []struct {
		name     string
		secret   string
		payload  []byte
		opts     []webhookstest.Option
		status   int
		answer   string
		handled  bool
		verified bool
	}{
		{"ok", secret, body, nil, 200, "ok", true, true},
		{"handler fails", secret, []byte(`{"action":"deleted"}`), nil, 500, "handler failed", true, true},
		{"wrong secret", "another secret", body, nil, 400, "signature does not match", false, false},
		{"no signature", secret, body, []webhookstest.Option{webhookstest.WithHeader(webhooks.HeaderSignature, "")}, 400, "X-Hub-Signature-256", false, false},
		{"no delivery id", secret, body, []webhookstest.Option{webhookstest.WithDeliveryID("")}, 400, "X-Forge-Delivery", false, false},
		{"not JSON", secret, []byte(`[]`), nil, 400, "not a JSON object", false, true},
		{"wrong content type", secret, body, []webhookstest.Option{webhookstest.WithHeader("Content-Type", "text/plain")}, 415, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, webhooks.MiddlewareOptions{})
			req := webhookstest.NewRequest(t, tc.secret, "issues", tc.payload, tc.opts...)
			rec := webhookstest.Deliver(t, r.mw, req)
			if rec.Code != tc.status || !strings.Contains(strings.ToLower(rec.Body.String()), strings.ToLower(tc.answer)) {
				t.Errorf("answer %d %q, want %d containing %q", rec.Code, rec.Body, tc.status, tc.answer)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if handled := len(r.events) == 1; handled != tc.handled {
				t.Fatalf("%d handler runs, want handled %v", len(r.events), tc.handled)
			}
			if len(r.results) != 1 || r.results[0].Status != tc.status || r.results[0].Verified != tc.verified {
				t.Fatalf("results %+v, want one of status %d verified %v", r.results, tc.status, tc.verified)
			}
			if !tc.handled {
				return
			}
			e, info := r.events[0], r.infos[0]
			if id := req.Header.Get(webhooks.HeaderDelivery); e.ID != id || info.ID != id || r.results[0].ID != id {
				t.Errorf("delivery id: event %q, DeliveryFrom %q, Result %q; the request's is %q", e.ID, info.ID, r.results[0].ID, id)
			}
			if !bytes.Equal(e.Payload, tc.payload) {
				t.Error("the handler's payload is not the request's body")
			}
			if got := info.Header.Get(webhookstest.HeaderHookID); got != webhookstest.HookID {
				t.Errorf("DeliveryFrom: hook id header %q, want %q", got, webhookstest.HookID)
			}
		})
	}
}

// TestDeliverPath: a request to another path than the middleware's is not its
// own, and WithPath reaches a middleware on another path.
func TestDeliverPath(t *testing.T) {
	r := newReceiver(t, webhooks.MiddlewareOptions{Path: "/hooks/forge"})
	body := webhookstest.Payload("ping")
	if rec := webhookstest.Deliver(t, r.mw, webhookstest.NewRequest(t, secret, "ping", body)); rec.Code != http.StatusNotFound {
		t.Errorf("default path to a middleware on /hooks/forge: %d, want 404", rec.Code)
	}
	if rec := webhookstest.Deliver(t, r.mw, webhookstest.NewRequest(t, secret, "ping", body, webhookstest.WithPath("/hooks/forge"))); rec.Code != http.StatusOK {
		t.Errorf("WithPath(/hooks/forge): %d %s, want 200", rec.Code, rec.Body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /t/{tenant}/hooks", func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, req.PathValue("tenant"))
	})
	if rec := webhookstest.Deliver(t, mux, webhookstest.NewRequest(t, secret, "ping", body, webhookstest.WithPath("/t/acme/hooks"))); rec.Code != 200 || rec.Body.String() != "acme" {
		t.Errorf("ServeMux pattern with a wildcard: %d %q, want 200 acme", rec.Code, rec.Body)
	}
}

// TestRequestOverHTTP sends NewRequest's headers and body to a real server on
// 127.0.0.1: the middleware there handles it as it does in process.
func TestRequestOverHTTP(t *testing.T) {
	r := newReceiver(t, webhooks.MiddlewareOptions{})
	srv := httptest.NewServer(r.mw)
	defer srv.Close()
	in := webhookstest.NewRequest(t, secret, "push", webhookstest.Payload("push"))
	req, err := http.NewRequest(in.Method, srv.URL+in.URL.RequestURI(), in.Body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = in.Header
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("answer %d %s, want 200", res.StatusCode, answer)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) != 1 || r.events[0].Name != "push" {
		t.Errorf("handled %v, want one push", r.events)
	}
}

// FuzzNewRequestVerifies: whatever the payload and event, the middleware
// verifies the signature of a request of NewRequest with the same secret.
func FuzzNewRequestVerifies(f *testing.F) {
	f.Add("push", []byte(`{"ref":"refs/heads/main"}`))
	f.Add("issues", []byte(`[]`))
	f.Add("x", []byte("\x00\xff"))
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	var verified bool
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: func(r webhooks.Result) { verified = r.Verified }})
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		if len(payload) == 0 || strings.TrimSpace(event) == "" || strings.ContainsAny(event, "\r\n") {
			t.Skip("not a delivery NewRequest makes")
		}
		verified = false
		rec := webhookstest.Deliver(t, mw, webhookstest.NewRequest(t, secret, event, payload))
		if !verified {
			t.Fatalf("not verified: %d %s", rec.Code, rec.Body)
		}
	})
}
