package otel_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"forgehooks.dev/forgehooks/emitter"
	forgeotel "forgehooks.dev/forgehooks/examples/otel"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// TestOnResult delivers requests to a real middleware whose OnResult is the
// adapter, and reads the recorded data points back with a manual reader of the
// OpenTelemetry SDK.
func TestOnResult(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	onResult, err := forgeotel.OnResult(provider.Meter("forgehooks"))
	if err != nil {
		t.Fatal(err)
	}
	wh, err := webhooks.New(webhooks.Options{Secret: "s", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	wh.On("push", func(context.Context, emitter.Event) error { return errors.New("fails") })
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: onResult})
	for range 3 {
		webhookstest.Deliver(t, mw, webhookstest.NewRequest(t, "s", "issues", webhookstest.Payload("issues.opened")))
	}
	webhookstest.Deliver(t, mw, webhookstest.NewRequest(t, "s", "push", webhookstest.Payload("push")))
	webhookstest.Deliver(t, mw, webhookstest.NewRequest(t, "forged", "anything at all", webhookstest.Payload("push")))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]uint64{{"issues", "200"}: 3, {"push", "500"}: 1, {metrics.EventUnverified, "400"}: 1}
	counts := map[string]map[[2]string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got := map[[2]string]uint64{}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, p := range d.DataPoints {
					got[key(p.Attributes)] += uint64(p.Value)
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s in %q, want s", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					got[key(p.Attributes)] += p.Count
					if len(p.Bounds) != len(metrics.DefaultBuckets()) {
						t.Errorf("%s has %d bounds", m.Name, len(p.Bounds))
					}
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
			counts[m.Name] = got
		}
	}
	for _, name := range []string{forgeotel.DeliveriesName, forgeotel.DurationName} {
		if got := counts[name]; len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		} else {
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s%v: %d, want %d", name, k, got[k], v)
				}
			}
		}
	}
}

func key(s attribute.Set) [2]string {
	ev, _ := s.Value(forgeotel.EventKey)
	st, _ := s.Value(forgeotel.StatusKey)
	return [2]string{ev.AsString(), strconv.FormatInt(st.AsInt64(), 10)}
}
