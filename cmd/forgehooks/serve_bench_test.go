package main

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
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// BenchmarkServeHandler is serve's handler without the network, on the
// median push of the HTTP load run: the middleware with a raw handler, as an
// application pays it, and serve's logDeliveries and recordDelivery, which find
// the repository and sender for the line and format it (to a discarded
// writer). The difference is what serve's log line costs per delivery.
func BenchmarkServeHandler(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
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
			mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
			var h http.Handler = mw
			if impl == "serve" {
				wh.OnAny(recordDelivery)
				h = logDeliveries(mw, webhooks.DefaultMaxInFlight, false, log)
			} else {
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
