package otel_test

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

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"forgehooks.dev/forgehooks/emitter"
	forgeotel "forgehooks.dev/forgehooks/examples/otel"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// TestTraceAcrossTheInbox: a delivery posted over HTTP to Ingest around a
// middleware with a durable inbox, whose handler (wrapped in Handler) fails
// its first attempt and succeeds at the retry: the ingest span and both
// attempts' spans are one trace, the attempts children of the ingest span,
// which continues the trace the request came with, or starts one.
func TestTraceAcrossTheInbox(t *testing.T) {
	for _, tc := range []struct{ name, traceparent string }{
		{"trace received", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"trace started at ingest", ""},
	} {
		t.Run(tc.name, func(t *testing.T) { traceAcrossTheInbox(t, tc.traceparent) })
	}
}

func traceAcrossTheInbox(t *testing.T, incoming string) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("forgehooks")

	logger := slog.New(slog.DiscardHandler)
	wh, err := webhooks.New(webhooks.Options{Secret: "trace-secret-0123456789", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	wh.OnAny(forgeotel.Handler(tracer, func(ctx context.Context, e emitter.Event) error {
		if info, _ := webhooks.DeliveryFrom(ctx); info.Attempt == 1 {
			return errors.New("downstream unavailable")
		}
		return nil
	}))
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: t.TempDir(), Receiver: wh, Logger: logger, RetryDelays: []time.Duration{20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(forgeotel.Ingest(tracer, webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in, Logger: logger})))
	defer srv.Close()

	body := webhookstest.Payload("issues.opened")
	r := webhookstest.NewRequest(t, "trace-secret-0123456789", "issues", body)
	if incoming != "" {
		r.Header.Set("Traceparent", incoming)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.Header
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("answer %d, want 202", res.StatusCode)
	}

	deadline := time.Now().Add(10 * time.Second)
	var ingest sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for {
		ingest, attempts = nil, nil
		for _, s := range rec.Ended() {
			switch s.Name() {
			case forgeotel.IngestSpanName:
				ingest = s
			case forgeotel.AttemptSpanName:
				attempts = append(attempts, s)
			}
		}
		if ingest != nil && len(attempts) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ingest == nil || len(attempts) != 2 {
		t.Fatalf("ingest span %v, %d attempt spans, want 2", ingest != nil, len(attempts))
	}
	trace := ingest.SpanContext().TraceID()
	switch {
	case incoming != "" && (trace.String() != incoming[3:35] || ingest.Parent().SpanID().String() != incoming[36:52]):
		t.Errorf("the ingest span (trace %s, parent %s) does not continue the request's trace", trace, ingest.Parent().SpanID())
	case incoming == "" && (!trace.IsValid() || ingest.Parent().IsValid()):
		t.Errorf("the ingest span (trace %s, parent %v) does not start a trace", trace, ingest.Parent())
	}
	for i, s := range attempts {
		if s.SpanContext().TraceID() != trace {
			t.Errorf("attempt %d: trace %s, want %s", i+1, s.SpanContext().TraceID(), trace)
		}
		if s.Parent().SpanID() != ingest.SpanContext().SpanID() {
			t.Errorf("attempt %d: parent %s, want the ingest span %s", i+1, s.Parent().SpanID(), ingest.SpanContext().SpanID())
		}
		var attempt int64
		for _, a := range s.Attributes() {
			if a.Key == forgeotel.AttemptKey {
				attempt = a.Value.AsInt64()
			}
		}
		if attempt != int64(i+1) {
			t.Errorf("span %d is attempt %d", i+1, attempt)
		}
		if want := map[bool]codes.Code{true: codes.Error, false: codes.Unset}[i == 0]; s.Status().Code != want {
			t.Errorf("attempt %d: status %v, want %v", i+1, s.Status().Code, want)
		}
	}
	t.Logf("trace %s: ingest span %s, attempts %s (failed) and %s (succeeded)", trace, ingest.SpanContext().SpanID(), attempts[0].SpanContext().SpanID(), attempts[1].SpanContext().SpanID())
}
