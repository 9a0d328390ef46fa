package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
)

// body8KiB is an issues.opened delivery of exactly 8 KiB.
func body8KiB() []byte {
	b := []byte(`{"action":"opened","pad":"`)
	b = append(b, bytes.Repeat([]byte("x"), 8<<10-len(b)-2)...)
	return append(b, `"}`...)
}

// BenchmarkMiddleware posts a signed 8 KiB delivery to a middleware with one
// raw handler: over a real keep-alive connection on 127.0.0.1 (end to end), and
// straight into ServeHTTP (the middleware's own cost).
func BenchmarkMiddleware(b *testing.B) {
	body := body8KiB()
	wh, err := New(Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	wh.On("issues.opened", func(context.Context, emitter.Event) error { return nil })
	m := NewMiddleware(wh, MiddlewareOptions{})
	sig, _ := wh.Sign(body)
	header := http.Header{
		"Content-Type":  {"application/json"},
		HeaderEvent:     {"issues"},
		HeaderDelivery:  {"d-1"},
		HeaderSignature: {sig},
	}

	b.Run("transport=http", func(b *testing.B) {
		srv := httptest.NewServer(m)
		defer srv.Close()
		client := srv.Client()
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			r, _ := http.NewRequest(http.MethodPost, srv.URL+DefaultPath, bytes.NewReader(body))
			r.Header = header.Clone()
			res, err := client.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatal(res.Status)
			}
		}
	})
	b.Run("transport=none", func(b *testing.B) { serveLoop(b, m, header, body) })
}

// serveLoop posts body with header straight into m.ServeHTTP, b.N times.
func serveLoop(b *testing.B, m *Middleware, header http.Header, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	rd := bytes.NewReader(body)
	for b.Loop() {
		rd.Reset(body)
		r := httptest.NewRequest(http.MethodPost, DefaultPath, rd)
		r.Header = header
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkMiddlewareTyped posts the load run's push (push-6.json, 7,124
// bytes) straight into ServeHTTP of a middleware with one typed push handler:
// verify, validate, decode and dispatch, without the network.
func BenchmarkMiddlewareTyped(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
	wh, err := New(Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	payloads.OnPushEvent(wh, func(_ context.Context, e payloads.Event[*payloads.PushEvent]) error {
		if e.Payload.Ref == "" {
			return errors.New("no ref")
		}
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{})
	sig, _ := wh.Sign(body)
	header := http.Header{
		"Content-Type":  {"application/json"},
		HeaderEvent:     {"push"},
		HeaderDelivery:  {"d-1"},
		HeaderSignature: {sig},
	}
	serveLoop(b, m, header, body)
}

// BenchmarkMiddlewareParallel posts the load run's push into ServeHTTP of a
// middleware with one typed push handler from b.RunParallel's goroutines,
// every bound at its default (the unverified budget, the minimum body rate,
// MaxInFlight and MaxRunningBytes), all requests from one client address.
// Run with -cpu 1,2,4,8: ns/op is wall time per request over all goroutines,
// so it falls as cores are added while they have work of their own, and
// stays flat (or rises) past the machine's cores or behind a lock or shared
// counter that every request takes.
func BenchmarkMiddlewareParallel(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
	wh, err := New(Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	payloads.OnPushEvent(wh, func(_ context.Context, e payloads.Event[*payloads.PushEvent]) error {
		if e.Payload.Ref == "" {
			return errors.New("no ref")
		}
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{})
	sig, _ := wh.Sign(body)
	header := http.Header{
		"Content-Type":  {"application/json"},
		HeaderEvent:     {"push"},
		HeaderDelivery:  {"d-1"},
		HeaderSignature: {sig},
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rd := bytes.NewReader(body)
		r := httptest.NewRequest(http.MethodPost, DefaultPath, rd)
		r.Header = header
		w := &benchWriter{header: http.Header{}}
		for pb.Next() {
			rd.Reset(body)
			r.Body = io.NopCloser(rd)
			w.reset()
			m.ServeHTTP(w, r)
			if w.code != http.StatusOK {
				b.Fatal(w.code)
			}
		}
	})
}

// benchWriter is a ResponseWriter reused from request to request, so that
// the benchmark's own writer neither allocates nor locks. Like net/http's, it
// can flush and take a read deadline (as a no-op: the body is in memory).
type benchWriter struct {
	header http.Header
	code   int
}

func (w *benchWriter) reset() {
	clear(w.header)
	w.code = 0
}

func (w *benchWriter) Header() http.Header { return w.header }

func (w *benchWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (w *benchWriter) Flush() {}

func (w *benchWriter) SetReadDeadline(time.Time) error { return nil }
