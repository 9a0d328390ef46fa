package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/promtext"
	"forgehooks.dev/forgehooks/metrics"
)

var metricsURL = regexp.MustCompile(`serving metrics" url=(http://\S+/metrics)`)

// TestServeMetrics runs serve --metrics, sends it deliveries with send, good
// and forged, scrapes the metrics over HTTP and parses them strictly.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--metrics", "127.0.0.1:0")
	m := metricsURL.FindStringSubmatch(sv.stderr.String())
	if m == nil {
		t.Fatalf("serve's log does not give the metrics URL:\n%s", sv.stderr)
	}
	url := "http://" + sv.addr + "/api/forge/webhooks"
	for range 2 {
		if code, out, errOut := runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "issues.opened"); code != exitOK {
			t.Fatalf("send: exit %d %s %s", code, out, errOut)
		}
	}
	runCmd(t, "", nil, "send", "--url", url, "--secret", "forged", "--event", "push")

	res, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("scrape: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	e, err := promtext.Parse(string(body))
	if err != nil {
		t.Fatalf("the metrics are not valid text format: %v\n%s", err, body)
	}
	for _, tc := range []struct {
		event, status string
		want          float64
	}{{"issues", "200", 2}, {metrics.EventUnverified, "400", 1}} {
		if got, _ := e.Value("forgehooks_deliveries_total", "event", tc.event, "status", tc.status); got != tc.want {
			t.Errorf("deliveries of %s answered %s: %v, want %v\n%s", tc.event, tc.status, got, tc.want, body)
		}
		if got, _ := e.Value("forgehooks_delivery_duration_seconds_count", "event", tc.event, "status", tc.status); got != tc.want {
			t.Errorf("duration count of %s answered %s: %v, want %v", tc.event, tc.status, got, tc.want)
		}
	}
	// The webhook address does not serve the metrics.
	if res, err := http.Get("http://" + sv.addr + "/metrics"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("metrics on the webhook address: %v %v", res.StatusCode, err)
	}
	if code := sv.stop(); code != exitOK {
		t.Errorf("serve exited %d", code)
	}
	if _, err := http.Get(m[1]); err == nil {
		t.Error("the metrics are still served after serve returned")
	}
}

// TestServeMetricsBadAddress: a malformed --metrics is a usage error (2), an
// address that cannot be listened on a failure (1).
func TestServeMetricsBadAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		addr   string
		code   int
		stderr string
	}{
		{"9090", exitUsage, `--metrics: "9090" is not host:port`},
		{"127.0.0.1:99999", exitUsage, `--metrics: "127.0.0.1:99999": port "99999" is not a number from 0 to 65535`},
		{busy.Addr().String(), exitFailure, "metrics: cannot listen on " + busy.Addr().String()},
	} {
		code, _, errOut := runCmd(t, "", nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--metrics", tc.addr)
		if code != tc.code || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("--metrics %s: exit %d, stderr %q; want %d and %q", tc.addr, code, errOut, tc.code, tc.stderr)
		}
	}
}
