package metrics_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

func ExampleMetrics_WriteTo() {
	m := metrics.New(metrics.Options{Buckets: []float64{0.01, 0.1}})
	// The middleware calls Observe through MiddlewareOptions.OnResult; here
	// by hand, for a delivery handled in 20 ms and a forged one.
	m.Observe(webhooks.Result{Name: "push", Verified: true, Status: 200, Duration: 20 * time.Millisecond})
	m.Observe(webhooks.Result{Name: "whatever the sender wrote", Status: 400, Duration: time.Millisecond})
	m.WriteTo(os.Stdout)
	// Output:
	// # HELP forgehooks_deliveries_total Requests to the webhook path, by event and HTTP status answered. The event of a request whose signature was not verified is (unverified).
	// # TYPE forgehooks_deliveries_total counter
	// forgehooks_deliveries_total{event="(unverified)",status="400"} 1
	// forgehooks_deliveries_total{event="push",status="200"} 1
	// # HELP forgehooks_delivery_duration_seconds Time from a request's start until its answer, or until its handlers returned when they ran, by event and HTTP status answered.
	// # TYPE forgehooks_delivery_duration_seconds histogram
	// forgehooks_delivery_duration_seconds_bucket{event="(unverified)",status="400",le="0.01"} 1
	// forgehooks_delivery_duration_seconds_bucket{event="(unverified)",status="400",le="0.1"} 1
	// forgehooks_delivery_duration_seconds_bucket{event="(unverified)",status="400",le="+Inf"} 1
	// forgehooks_delivery_duration_seconds_sum{event="(unverified)",status="400"} 0.001
	// forgehooks_delivery_duration_seconds_count{event="(unverified)",status="400"} 1
	// forgehooks_delivery_duration_seconds_bucket{event="push",status="200",le="0.01"} 0
	// forgehooks_delivery_duration_seconds_bucket{event="push",status="200",le="0.1"} 1
	// forgehooks_delivery_duration_seconds_bucket{event="push",status="200",le="+Inf"} 1
	// forgehooks_delivery_duration_seconds_sum{event="push",status="200"} 0.02
	// forgehooks_delivery_duration_seconds_count{event="push",status="200"} 1
}

// A receiver with its metrics on a second address, for the scraper only.
func ExampleNew() {
	wh, err := webhooks.New(webhooks.Options{Secret: "mysecret"})
	if err != nil {
		log.Fatal(err)
	}
	m := metrics.New(metrics.Options{})
	hooks := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: m.Observe}))
	defer hooks.Close()
	scrape := httptest.NewServer(m) // in production: http.ListenAndServe("127.0.0.1:9090", mux) with mux.Handle("GET /metrics", m)
	defer scrape.Close()

	res, err := http.Post(hooks.URL+webhooks.DefaultPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Get(scrape.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "forgehooks_deliveries_total") {
			fmt.Println(sc.Text())
		}
	}
	// Output: forgehooks_deliveries_total{event="(unverified)",status="400"} 1
}
