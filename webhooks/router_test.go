package webhooks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/syncbuf"
	"forgehooks.dev/forgehooks/webhooks"
)

const routerSecret = "router-test-secret-0123456789"

// signedRequest is a signed "issues.opened" delivery to url.
func signedRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	body := `{"action":"opened"}`
	sig, err := webhooks.New(webhooks.Options{Secret: routerSecret})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sig.Sign([]byte(body))
	r := httptest.NewRequest(method, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, "issues")
	r.Header.Set(webhooks.HeaderDelivery, "d-1")
	r.Header.Set(webhooks.HeaderSignature, s)
	return r
}

// syncBuffer is a buffer safe for a server writing while a test reads.
type syncBuffer = syncbuf.Buffer

// TestServeMuxMounting: AnyPath serves under ServeMux patterns with a method
// and wildcards, whatever MiddlewareOptions.Path says; the mux answers other
// methods and paths itself. The path-checking Middleware mounted under a
// pattern that is not its Path answers 404 and warns, naming the Path.
func TestServeMuxMounting(t *testing.T) {
	var log syncBuffer
	wh, err := webhooks.New(webhooks.Options{Secret: routerSecret, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close(context.Background())
	var mu sync.Mutex
	var seen []string
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.ID)
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}) // Path: the default
	mux := http.NewServeMux()
	mux.Handle("POST /t/{tenant}/hooks", mw.AnyPath())
	mux.Handle("POST /hooks/{rest...}", mw.AnyPath())
	mux.Handle("POST /checked/forge", mw) // the path-checking handler, misplaced

	tests := []struct {
		name, method, url string
		status            int
		body              string
		ran               bool
	}{
		{"wildcard", "POST", "/t/acme/hooks", 200, "ok\n", true},
		{"another tenant", "POST", "/t/other/hooks?x=1", 200, "ok\n", true},
		{"rest wildcard", "POST", "/hooks/a/b/c", 200, "ok\n", true},
		{"method the pattern refuses", "GET", "/t/acme/hooks", 405, "", false},
		{"no pattern", "POST", "/t/acme/other", 404, "", false},
		{"path-checking handler under another pattern", "POST", "/checked/forge", 404, `{"error":"Unknown route: POST /checked/forge"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, signedRequest(t, tt.method, tt.url))
			if w.Code != tt.status || tt.body != "" && w.Body.String() != tt.body {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.url, w.Code, w.Body, tt.status, tt.body)
			}
			mu.Lock()
			ran := len(seen) == 1
			mu.Unlock()
			if ran != tt.ran {
				t.Errorf("handler ran: %v, want %v", ran, tt.ran)
			}
		})
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "configured_path=/api/forge/webhooks") || !strings.Contains(log.String(), "AnyPath") {
		t.Errorf("the misplaced handler's 404 is not a warning naming the configured path:\n%s", log.String())
	}
}

// TestAnyPathChecksTheRest: AnyPath skips only the path check; the method,
// content type, headers and signature are checked as ever.
func TestAnyPathChecksTheRest(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Secret: routerSecret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close(context.Background())
	h := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/never/used"}).AnyPath()
	forged := signedRequest(t, "POST", "/anything")
	forged.Header.Set(webhooks.HeaderSignature, "sha256="+strings.Repeat("0", 64))
	noType := signedRequest(t, "POST", "/anything")
	noType.Header.Del("Content-Type")
	for name, tc := range map[string]struct {
		r      *http.Request
		status int
	}{
		"valid":             {signedRequest(t, "POST", "/anything"), 200},
		"GET":               {signedRequest(t, "GET", "/anything"), 404},
		"forged":            {forged, 400},
		"no content type":   {noType, 415},
		"root path":         {signedRequest(t, "POST", "/"), 200},
		"encoded slash too": {signedRequest(t, "POST", "/a%2Fb"), 200},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, tc.r)
		if w.Code != tc.status {
			body, _ := io.ReadAll(w.Body)
			t.Errorf("%s: %d %s, want %d", name, w.Code, body, tc.status)
		}
	}
}
