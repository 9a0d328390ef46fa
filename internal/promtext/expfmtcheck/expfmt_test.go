package expfmtcheck

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"forgehooks.dev/forgehooks/internal/promtext"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

// samples flattens expfmt's families into promtext's sample IDs and values.
func samples(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[promtext.ID(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					bl := map[string]string{"le": formatLE(b.GetUpperBound())}
					for k, v := range labels {
						bl[k] = v
					}
					out[promtext.ID(name+"_bucket", bl)] = float64(b.GetCumulativeCount())
				}
				out[promtext.ID(name+"_sum", labels)] = h.GetSampleSum()
				out[promtext.ID(name+"_count", labels)] = float64(h.GetSampleCount())
			}
		}
	}
	return out
}

func formatLE(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return fmt.Sprint(f)
}

func parseBoth(t *testing.T, text string) {
	t.Helper()
	mine, err := promtext.Parse(text)
	if err != nil {
		t.Fatalf("promtext: %v\n%s", err, text)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	theirs := samples(families)
	// expfmt adds the implied +Inf bucket only when it is missing; the
	// exporter writes it, so the two sets must be the same.
	if len(theirs) != len(mine.Samples) {
		t.Fatalf("expfmt found %d samples, promtext %d", len(theirs), len(mine.Samples))
	}
	for id, v := range mine.Samples {
		if w, ok := theirs[id]; !ok || w != v {
			t.Errorf("%s: promtext %v, expfmt %v (%v)", id, v, w, ok)
		}
	}
	for name, typ := range mine.Types {
		if got := strings.ToLower(families[name].GetType().String()); got != typ {
			t.Errorf("%s: promtext type %s, expfmt %s", name, typ, got)
		}
	}
}

// TestMetricsExposition: random results observed, the exposition of package
// metrics parses with expfmt to the same samples as with promtext.
func TestMetricsExposition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	events := []string{"push", "issues", "pull_request", "Not-An-Event", "a\"b\\c", ""}
	statuses := []int{200, 202, 400, 404, 413, 415, 500, 503, 0, 1000}
	for round := range 20 {
		m := metrics.New(metrics.Options{MaxEvents: 2 + round%3})
		for range 200 {
			m.Observe(webhooks.Result{
				Name:     events[r.IntN(len(events))],
				Verified: r.IntN(4) != 0,
				Status:   statuses[r.IntN(len(statuses))],
				Duration: time.Duration(r.Int64N(int64(40 * time.Second))),
			})
		}
		var b strings.Builder
		m.WriteTo(&b)
		parseBoth(t, b.String())
	}
}

// TestPromtextAgrees: texts promtext accepts, expfmt accepts with the same
// values.
func TestPromtextAgrees(t *testing.T) {
	for _, text := range []string{
		"# TYPE a_total counter\na_total{x=\"1\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n",
		"# HELP a_total x \\\\ y\\n\n# TYPE a_total counter\na_total{b=\"q\\\"\\n\\\\\",a=\"1\"} 2.5e3\n",
		"# TYPE g_total counter\ng_total 0\n",
	} {
		parseBoth(t, text)
	}
}
