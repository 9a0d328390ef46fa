package bench

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// BenchmarkServe is the middleware's ServeHTTP for the load run's payload (the
// corpus median push), in process: no network, no httptest, a request and a
// writer reused, so that allocs/op and instructions per op are the
// middleware's and its handlers' alone. The rows: a raw OnAny handler; one
// typed push handler; a typed handler for every event (RegisterEveryEvent,
// the load run's typed-all); and a push delivery to a receiver whose only
// handler is for issues (what a delivery without a matching handler pays).
func BenchmarkServe(b *testing.B) {
	all := loadCorpus(b, false)
	d, err := MedianPush(all)
	if err != nil {
		b.Fatal(err)
	}
	push := func(_ context.Context, e payloads.Event[*payloads.PushEvent]) error {
		if e.Payload.Ref == "" {
			return errors.New("no ref")
		}
		return nil
	}
	rows := []struct {
		name     string
		register func(*webhooks.Webhooks)
	}{
		{"handlers=raw", func(wh *webhooks.Webhooks) {
			wh.OnAny(func(context.Context, emitter.Event) error { return nil })
		}},
		{"handlers=push", func(wh *webhooks.Webhooks) { payloads.OnPushEvent(wh, push) }},
		{"handlers=every-event", func(wh *webhooks.Webhooks) { RegisterEveryEvent(wh, push) }},
		{"handlers=issues-only", func(wh *webhooks.Webhooks) {
			payloads.OnIssuesEvent(wh, func(context.Context, payloads.Event[payloads.IssuesEvent]) error { return nil })
		}},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			wh := newWebhooks(b)
			row.register(wh)
			serveLoop(b, webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/"}), &d)
		})
	}
}

// serveLoop posts d into m.ServeHTTP b.N times, with one request and one
// writer reused, and fails unless each is answered 200.
func serveLoop(b *testing.B, m http.Handler, d *Delivery) {
	var body reusedBody
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", &body)
	if err != nil {
		b.Fatal(err)
	}
	r.RemoteAddr = "127.0.0.1:40000"
	r.ContentLength = int64(len(d.Body))
	r.Header = http.Header{
		"Content-Type":        {"application/json"},
		"X-Forge-Event":       {d.Event},
		"X-Forge-Delivery":    {"d-1"},
		"X-Hub-Signature-256": {d.Signature},
	}
	w := &discardWriter{header: http.Header{}}
	b.SetBytes(int64(len(d.Body)))
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(d.Body)
		clear(w.header)
		w.code = 0
		m.ServeHTTP(w, r)
		if w.code != http.StatusOK && w.code != 0 {
			b.Fatalf("answered %d", w.code)
		}
	}
}

// reusedBody is a request body that can be read again after Reset.
type reusedBody struct{ bytes.Reader }

func (*reusedBody) Close() error { return nil }

// discardWriter is what net/http's own writer offers the middleware (a
// header, a status, flushing, a read deadline) without keeping anything.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}
func (w *discardWriter) WriteString(s string) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(s), nil
}
func (w *discardWriter) Flush()                           {}
func (w *discardWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }
