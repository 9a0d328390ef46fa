package otel

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// Span names and attribute keys of the tracing adapters.
const (
	// IngestSpanName names the span of a request, from Ingest.
	IngestSpanName = "forgehooks.ingest"
	// AttemptSpanName names the span of one attempt of a delivery's
	// handlers, from Handler.
	AttemptSpanName = "forgehooks.attempt"

	// DeliveryKey is the delivery id (X-Forge-Delivery), on both spans.
	DeliveryKey = attribute.Key("forge.delivery")
	// AttemptKey is the attempt number, from 1, on an attempt's span.
	AttemptKey = attribute.Key("forge.attempt")
)

// propagator is W3C Trace Context: the traceparent and tracestate headers.
var propagator = propagation.TraceContext{}

// Ingest wraps the webhook middleware (next) in a span per request, a child
// of the trace context the request carries, if any. It writes that span's
// context into the request's traceparent header before calling next, so
// that a durable inbox stores it with the delivery: each attempt's handlers,
// however much later and on whichever receiver, continue the same trace
// (see Handler).
func Ingest(tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, IngestSpanName, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(EventKey.String(r.Header.Get(webhooks.HeaderEvent)), DeliveryKey.String(r.Header.Get(webhooks.HeaderDelivery))))
		defer span.End()
		// The headers are the request's own: a copy keeps the caller's.
		r = r.Clone(ctx)
		propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		span.SetAttributes(StatusKey.Int(sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// Handler wraps h in a span per attempt, a child of the trace context stored
// with the delivery (its traceparent header, as Ingest set it), with the
// delivery id and attempt number; an error of h is recorded on the span.
func Handler(tracer trace.Tracer, h emitter.Handler) emitter.Handler {
	return func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		if info.Header != nil {
			ctx = propagator.Extract(ctx, propagation.HeaderCarrier(info.Header))
		}
		ctx, span := tracer.Start(ctx, AttemptSpanName, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(EventKey.String(e.Name), DeliveryKey.String(e.ID), AttemptKey.Int(info.Attempt)))
		defer span.End()
		err := h(ctx, e)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "attempt "+strconv.Itoa(info.Attempt)+" failed")
		}
		return err
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
