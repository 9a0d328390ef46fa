package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	gogithub "github.com/google/go-github/v75/github"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// BenchmarkLarge is one delivery of 25 MiB (the forge's limit, a push of many
// commits) through an HTTP handler, without the network: B/op is everything a
// delivery allocates, an upper bound of the heap it holds at its peak.
func BenchmarkLarge(b *testing.B) {
	var body []byte
	for _, d := range loadCorpus(b, false) {
		// The first push with commits to repeat.
		if d.Event == "push" && body == nil {
			body, _ = LargePush(d.Body, webhooks.DefaultMaxBodyBytes)
		}
	}
	if body == nil {
		b.Fatal("no push payload with commits in the corpus")
	}
	d := &Delivery{Event: "push", Body: body, Signature: Sign(body)}
	b.Logf("body: %d bytes", len(body))

	run := func(name string, h http.Handler, want int) {
		b.Run("impl="+name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			rd := bytes.NewReader(body)
			for b.Loop() {
				rd.Reset(body)
				r := httptest.NewRequest(http.MethodPost, webhooks.DefaultPath, rd)
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(webhooks.HeaderEvent, d.Event)
				r.Header.Set(webhooks.HeaderDelivery, "d-1")
				r.Header.Set(webhooks.HeaderSignature, d.Signature)
				r.Header.Set("X-GitHub-Event", d.Event)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != want {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
	b.Run("impl=floor-hmac", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if err := hmacVerify(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	raw := newWebhooks(b)
	raw.On("push", func(context.Context, emitter.Event) error { return nil })
	run("forgehooks-raw", webhooks.NewMiddleware(raw, webhooks.MiddlewareOptions{}), http.StatusOK)
	typed := newWebhooks(b)
	payloads.OnPushEvent(typed, func(context.Context, payloads.Event[*payloads.PushEvent]) error { return nil })
	run("forgehooks-typed", webhooks.NewMiddleware(typed, webhooks.MiddlewareOptions{}), http.StatusOK)
	run("go-github", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := gogithub.ValidatePayload(r, []byte(Secret))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := gogithub.ParseWebHook(gogithub.WebHookType(r), payload); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}), http.StatusOK)
}
