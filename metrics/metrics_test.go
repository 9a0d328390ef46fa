package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/promtext"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

const secret = "metrics test secret"

// scrape GETs url and parses the answer strictly.
func scrape(t *testing.T, client *http.Client, url string) *promtext.Exposition {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("scrape: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	e, err := promtext.Parse(string(body))
	if err != nil {
		t.Fatalf("the exposition is not valid: %v\n%s", err, body)
	}
	return e
}

func series(e *promtext.Exposition, name, event, status string, more ...string) float64 {
	l := map[string]string{"event": event, "status": status}
	for i := 0; i+1 < len(more); i += 2 {
		l[more[i]] = more[i+1]
	}
	v, ok := e.Samples[promtext.ID(name, l)]
	if !ok {
		return math.NaN()
	}
	return v
}

// TestScrapeOverHTTP runs a real middleware fed to a Metrics on 127.0.0.1,
// posts deliveries good and bad to it, scrapes /metrics over HTTP and checks
// the parsed counts and histograms.
func TestScrapeOverHTTP(t *testing.T) {
	m := metrics.New(metrics.Options{})
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	wh.On("push", func(ctx context.Context, e emitter.Event) error {
		return errors.New("push handler fails")
	})
	wh.On("issues", func(ctx context.Context, e emitter.Event) error {
		time.Sleep(3 * time.Millisecond)
		return nil
	})
	hooks := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: m.Observe}))
	defer hooks.Close()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m)
	scrapes := httptest.NewServer(mux)
	defer scrapes.Close()

	post := func(secret, event string, opts ...webhookstest.Option) {
		in := webhookstest.NewRequest(t, secret, event, webhookstest.Payload(strings.Split(event, "/")[0]), opts...)
		in.Header.Set(webhooks.HeaderEvent, event)
		req, _ := http.NewRequest(in.Method, hooks.URL+in.URL.RequestURI(), in.Body)
		req.Header = in.Header
		res, err := hooks.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	for range 3 {
		post(secret, "issues")
	}
	post(secret, "push")
	post("wrong secret", "issues")
	post("wrong secret", "push/../\"evil\"{x}")
	post(secret, "ping", webhookstest.WithHeader(webhooks.HeaderDelivery, ""))

	const total, hist = "forgehooks_deliveries_total", "forgehooks_delivery_duration_seconds"
	e := scrape(t, scrapes.Client(), scrapes.URL+"/metrics")
	for _, tc := range []struct {
		event, status string
		want          float64
	}{
		{"issues", "200", 3},
		{"push", "500", 1},
		{metrics.EventUnverified, "400", 3},
	} {
		if got := series(e, total, tc.event, tc.status); got != tc.want {
			t.Errorf("%s{event=%q,status=%q} = %v, want %v", total, tc.event, tc.status, got, tc.want)
		}
		if got := series(e, hist+"_count", tc.event, tc.status); got != tc.want {
			t.Errorf("%s_count{event=%q,status=%q} = %v, want %v", hist, tc.event, tc.status, got, tc.want)
		}
	}
	if n := len(e.Samples); n != 3+3*(len(metrics.DefaultBuckets())+3) {
		t.Errorf("%d samples, want those of 3 series", n)
	}
	// The issues handler sleeps 3 ms: none of its deliveries is in the buckets
	// up to 2.5 ms, and its sum is at least 9 ms.
	if got := series(e, hist+"_bucket", "issues", "200", "le", "0.0025"); got != 0 {
		t.Errorf("issues deliveries under 2.5 ms: %v, want 0", got)
	}
	if got := series(e, hist+"_sum", "issues", "200"); !(got >= 0.009 && got < 10) {
		t.Errorf("issues duration sum %v s, want at least 0.009", got)
	}
	if e.Types[total] != "counter" || e.Types[hist] != "histogram" {
		t.Errorf("types %v", e.Types)
	}
}

// TestBuckets puts known durations in the buckets, bounds included.
func TestBuckets(t *testing.T) {
	m := metrics.New(metrics.Options{Buckets: []float64{0.001, 0.01, 1}})
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 10 * time.Millisecond, time.Second, time.Minute, -time.Second} {
		m.Observe(webhooks.Result{Name: "push", Verified: true, Status: 200, Duration: d})
	}
	e := parse(t, m)
	const h = "forgehooks_delivery_duration_seconds"
	for le, want := range map[string]float64{"0.001": 3, "0.01": 5, "1": 6, "+Inf": 7} {
		if got := series(e, h+"_bucket", "push", "200", "le", le); got != want {
			t.Errorf("le=%s: %v, want %v", le, got, want)
		}
	}
	if got, want := series(e, h+"_sum", "push", "200"), 61.013; math.Abs(got-want) > 1e-9 {
		t.Errorf("sum %v, want %v", got, want)
	}
}

func parse(t *testing.T, m *metrics.Metrics) *promtext.Exposition {
	t.Helper()
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	e, err := promtext.Parse(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return e
}

// TestCardinality: whatever senders put in the event header, and however
// many event names verified deliveries bring, the series stay bounded.
func TestCardinality(t *testing.T) {
	m := metrics.New(metrics.Options{MaxEvents: 5})
	for i := range 10000 {
		m.Observe(webhooks.Result{Name: fmt.Sprintf("garbage-%d", i), Status: 400})
		m.Observe(webhooks.Result{Name: fmt.Sprintf("event_%d", i%50), Verified: true, Status: 200})
	}
	for _, ev := range []string{"Push", "püsh", `a"b`, "a\nb", strings.Repeat("a", 65), ""} {
		m.Observe(webhooks.Result{Name: ev, Verified: true, Status: 200})
	}
	m.Observe(webhooks.Result{Name: "event_0", Verified: true, Status: 0})
	m.Observe(webhooks.Result{Name: "event_0", Verified: true, Status: 1000})
	e := parse(t, m)
	const total = "forgehooks_deliveries_total"
	got := map[string]float64{}
	for k, v := range e.Samples {
		if strings.HasPrefix(k, total+"{") {
			got[k] = v
		}
	}
	want := map[string]float64{
		promtext.ID(total, map[string]string{"event": metrics.EventUnverified, "status": "400"}): 10000,
		promtext.ID(total, map[string]string{"event": metrics.EventOther, "status": "200"}):      45*200 + 6,
		promtext.ID(total, map[string]string{"event": "event_0", "status": metrics.StatusOther}): 2,
	}
	for i := range 5 {
		want[promtext.ID(total, map[string]string{"event": fmt.Sprintf("event_%d", i), "status": "200"})] = 200
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("series\n%v\nwant\n%v", got, want)
	}
}

// TestConcurrent observes and scrapes at once (run with -race); the totals
// come out exact.
func TestConcurrent(t *testing.T) {
	m := metrics.New(metrics.Options{})
	var wg sync.WaitGroup
	const workers, each = 8, 2000
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m.Observe(webhooks.Result{Name: fmt.Sprintf("e%d", (w+i)%4), Verified: true, Status: 200 + i%2*300, Duration: time.Duration(i) * time.Microsecond})
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			m.WriteTo(io.Discard)
		}
	})
	wg.Wait()
	e := parse(t, m)
	var sum float64
	for k, v := range e.Samples {
		if strings.HasPrefix(k, "forgehooks_deliveries_total{") {
			sum += v
		}
	}
	if sum != workers*each {
		t.Errorf("counted %v deliveries, want %d", sum, workers*each)
	}
}

// TestServeHTTP: GET and HEAD are answered, other methods 405.
func TestServeHTTP(t *testing.T) {
	m := metrics.New(metrics.Options{Namespace: "app_hooks"})
	m.Observe(webhooks.Result{Name: "ping", Verified: true, Status: 200})
	for _, tc := range []struct {
		method string
		status int
		body   bool
	}{{"GET", 200, true}, {"HEAD", 200, false}, {"POST", 405, false}} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(tc.method, "/metrics", nil))
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d", tc.method, rec.Code, tc.status)
		}
		if tc.status == 405 && rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("405 without Allow")
		}
		if got := strings.Contains(rec.Body.String(), `app_hooks_deliveries_total{event="ping",status="200"} 1`); got != tc.body {
			t.Errorf("%s: body has the sample: %v, want %v\n%s", tc.method, got, tc.body, rec.Body)
		}
	}
}

// TestNewPanics: a bad namespace or bucket list is the program's mistake.
func TestNewPanics(t *testing.T) {
	for _, opts := range []metrics.Options{
		{Namespace: "9lives"},
		{Namespace: "a-b"},
		{Buckets: []float64{1, 1}},
		{Buckets: []float64{2, 1}},
		{Buckets: []float64{math.NaN()}},
		{Buckets: []float64{1, math.Inf(1)}},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, "metrics: Options.") {
					t.Errorf("New(%+v) panicked with %q", opts, msg)
				}
			}()
			metrics.New(opts)
		}()
	}
}

// FuzzExposition: whatever results are observed, the exposition is valid and
// its series stay within the bound.
func FuzzExposition(f *testing.F) {
	f.Add("push", 200, int64(1000), true)
	f.Add("a\"b\\c\nd", 0, int64(-5), true)
	f.Add("x", 999, int64(math.MaxInt64), false)
	m := metrics.New(metrics.Options{MaxEvents: 3})
	f.Fuzz(func(t *testing.T, event string, status int, d int64, verified bool) {
		m.Observe(webhooks.Result{Name: event, Status: status, Duration: time.Duration(d), Verified: verified})
		e := parse(t, m)
		if n := len(e.Samples); n > (3+2)*502*(len(metrics.DefaultBuckets())+4) {
			t.Fatalf("%d samples", n)
		}
	})
}

// TestStandardLibraryOnly: package metrics depends on the standard library
// and the module's own packages alone.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "forgehooks.dev/forgehooks/metrics").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list found %v: not what this test expects", deps)
	}
	for _, p := range deps {
		if !strings.HasPrefix(p, "forgehooks.dev/forgehooks/") {
			t.Errorf("metrics depends on %s, outside the standard library", p)
		}
	}
}

// BenchmarkObserve is the cost OnResult adds to each delivery, from parallel
// requests of a few events.
func BenchmarkObserve(b *testing.B) {
	m := metrics.New(metrics.Options{})
	events := []string{"push", "issues", "pull_request", "check_run"}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Observe(webhooks.Result{Name: events[i%4], Verified: true, Status: 200, Duration: time.Duration(i%5000) * time.Microsecond})
			i++
		}
	})
}

// TestMaxEventsRule: zero is DefaultMaxEvents; negative is no bound, so every
// verified event name gets its series.
func TestMaxEventsRule(t *testing.T) {
	count := func(opts metrics.Options, names int) int {
		m := metrics.New(opts)
		for i := range names {
			m.Observe(webhooks.Result{Name: fmt.Sprintf("event_%d", i), Verified: true, Status: 200})
		}
		n := 0
		for k := range parse(t, m).Samples {
			if strings.HasPrefix(k, "forgehooks_deliveries_total{") && !strings.Contains(k, metrics.EventOther) {
				n++
			}
		}
		return n
	}
	if n := count(metrics.Options{}, metrics.DefaultMaxEvents+10); n != metrics.DefaultMaxEvents {
		t.Errorf("zero MaxEvents: %d event series, want DefaultMaxEvents (%d)", n, metrics.DefaultMaxEvents)
	}
	if n := count(metrics.Options{MaxEvents: -1}, metrics.DefaultMaxEvents+10); n != metrics.DefaultMaxEvents+10 {
		t.Errorf("negative MaxEvents: %d event series, want %d", n, metrics.DefaultMaxEvents+10)
	}
}
