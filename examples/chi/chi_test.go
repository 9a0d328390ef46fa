// Package chi_test mounts a forgehooks Middleware under chi routes. It is a
// module of its own, so that chi is no dependency of forgehooks itself.
package chi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

const secret = "chi-example-secret-0123456789"

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestChiRoutes: mw.AnyPath() serves under chi routes with URL parameters and
// in a sub-router, whatever MiddlewareOptions.Path says; chi answers other
// methods (405) and paths (404) itself; mw.Wrap as chi middleware serves the
// configured Path and passes the rest on; the path-checking Middleware under
// a route that is not its Path answers 404 and warns, naming the Path.
func TestChiRoutes(t *testing.T) {
	var log lockedBuffer
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close(context.Background())
	var mu sync.Mutex
	ran := 0
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		ran++
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}) // Path: /api/forge/webhooks

	r := chi.NewRouter()
	r.Post("/t/{tenant}/hooks", mw.AnyPath().ServeHTTP)
	r.Route("/v1", func(r chi.Router) {
		r.Method(http.MethodPost, "/forge/*", mw.AnyPath())
	})
	r.Post("/checked", mw.ServeHTTP) // misplaced: the path is not mw's
	r.Group(func(r chi.Router) {
		r.Use(mw.Wrap)
		r.Get("/api/forge/webhooks", func(w http.ResponseWriter, r *http.Request) {
			t.Error("Wrap passed on a request for its own path")
		})
		r.Post("/api/forge/webhooks", func(w http.ResponseWriter, r *http.Request) {
			t.Error("Wrap passed on a request for its own path")
		})
		r.Get("/health", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("healthy")) })
	})

	tests := []struct {
		name, method, path string
		status             int
		body               string
		ran                bool
	}{
		{"URL parameter", "POST", "/t/acme/hooks", 200, "ok\n", true},
		{"sub-router wildcard", "POST", "/v1/forge/a/b", 200, "ok\n", true},
		{"method chi refuses", "GET", "/t/acme/hooks", 405, "", false},
		{"no route", "POST", "/t/acme", 404, "", false},
		{"Wrap: its path", "POST", "/api/forge/webhooks", 200, "ok\n", true},
		{"Wrap: other requests pass", "GET", "/health", 200, "healthy", false},
		{"misplaced path-checking handler", "POST", "/checked", 404, `{"error":"Unknown route: POST /checked"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			ran = 0
			mu.Unlock()
			body := `{"action":"opened"}`
			sig, _ := wh.Sign([]byte(body))
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(webhooks.HeaderEvent, "issues")
			req.Header.Set(webhooks.HeaderDelivery, "d-1")
			req.Header.Set(webhooks.HeaderSignature, sig)
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != tt.status || tt.body != "" && w.Body.String() != tt.body {
				t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, w.Code, w.Body, tt.status, tt.body)
			}
			mu.Lock()
			got := ran == 1
			mu.Unlock()
			if got != tt.ran {
				t.Errorf("handler ran: %v, want %v", got, tt.ran)
			}
		})
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "configured_path=/api/forge/webhooks") {
		t.Errorf("the misplaced handler's 404 is not a warning naming the configured path:\n%s", log.String())
	}
}
