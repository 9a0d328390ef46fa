package receiver_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// BenchmarkServeHandler is serve's handler (Receiver.Handler) without the
// network, on the median push of the HTTP load run: the middleware with a raw
// handler, as an application pays it, and the Receiver's, whose line per
// delivery finds the repository and sender and formats them (to a discarded
// writer). The difference is what serve's log line costs per delivery.
func BenchmarkServeHandler(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
	const testSecret = "bench-secret-0123456789"
	sig, err := signing.Sign(testSecret, body)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, impl := range []string{"middleware-raw", "serve"} {
		b.Run("impl="+impl, func(b *testing.B) {
			wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: log})
			if err != nil {
				b.Fatal(err)
			}
			var h http.Handler
			if impl == "serve" {
				r, err := receiver.New(context.Background(), receiver.Options{Webhooks: wh, Logger: log})
				if err != nil {
					b.Fatal(err)
				}
				h = r.Handler()
			} else {
				h = webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
				wh.OnAny(func(context.Context, emitter.Event) error { return nil })
			}
			rd := bytes.NewReader(nil)
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				r := httptest.NewRequest(http.MethodPost, webhooks.DefaultPath, rd)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(webhooks.HeaderEvent, "push")
				r.Header.Set(webhooks.HeaderDelivery, "d-1")
				r.Header.Set(webhooks.HeaderSignature, sig)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
