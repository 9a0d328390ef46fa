package otel_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	forgeotel "forgehooks.dev/forgehooks/examples/otel"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// The application's meter provider, here with a manual reader; in production
// one with an OTLP or Prometheus exporter.
func ExampleOnResult() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	onResult, err := forgeotel.OnResult(provider.Meter("forgehooks"))
	if err != nil {
		log.Fatal(err)
	}
	wh, _ := webhooks.New(webhooks.Options{Secret: "s"})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: onResult})

	t := &testing.T{} // in a test, the test's own
	req := webhookstest.NewRequest(t, "s", "ping", webhookstest.Payload("ping"))
	webhookstest.Deliver(t, mw, req)

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println(m.Name)
	}
	// Output:
	// forgehooks.deliveries
	// forgehooks.delivery.duration
}
