// Package otel is an example, in a module of its own so that the SDK does not
// depend on OpenTelemetry: it feeds the webhook middleware's per-delivery
// results (webhooks.MiddlewareOptions.OnResult) to OpenTelemetry metrics, and
// traces each delivery from its request through every attempt of its
// handlers in a durable inbox, retries included, as one trace (Ingest and
// Handler). Copy
// it into an application that already exports OpenTelemetry; applications
// without a metrics library use package metrics instead, which serves the
// Prometheus text format with the standard library alone.
package otel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

// Attribute keys of the instruments' data points.
const (
	// EventKey is the delivery's event, bounded as metrics.EventLabel bounds
	// it: requests that were not verified share one value, whatever their
	// header said.
	EventKey = attribute.Key("forge.event")
	// StatusKey is the HTTP status answered, an integer, as OpenTelemetry's
	// HTTP conventions name and type it.
	StatusKey = attribute.Key("http.response.status_code")
)

// Instrument names.
const (
	DeliveriesName = "forgehooks.deliveries"
	DurationName   = "forgehooks.delivery.duration"
)

// OnResult returns a function for webhooks.MiddlewareOptions.OnResult that
// records each request on two instruments of meter: the counter
// forgehooks.deliveries and the histogram forgehooks.delivery.duration, in
// seconds, both with EventKey and StatusKey. The SDK's cardinality limit
// (2000 series per instrument by default) bounds distinct verified event
// names beyond what EventLabel does.
func OnResult(meter metric.Meter) (func(webhooks.Result), error) {
	deliveries, err := meter.Int64Counter(DeliveriesName,
		metric.WithDescription("Requests to the webhook path, by event and HTTP status answered."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, err
	}
	duration, err := meter.Float64Histogram(DurationName,
		metric.WithDescription("Time from a request's start until its answer, or until its handlers returned when they ran."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(metrics.DefaultBuckets()...))
	if err != nil {
		return nil, err
	}
	return func(r webhooks.Result) {
		// OnResult runs after the request's answer, when its context may be
		// gone; exporters take their context elsewhere.
		ctx := context.Background()
		attrs := metric.WithAttributeSet(attribute.NewSet(
			EventKey.String(metrics.EventLabel(r)),
			StatusKey.Int(r.Status),
		))
		deliveries.Add(ctx, 1, attrs)
		duration.Record(ctx, r.Duration.Seconds(), attrs)
	}, nil
}
