package promtext_test

import (
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/promtext"
)

// TestParseRejects: the checker fails each kind of invalid exposition.
func TestParseRejects(t *testing.T) {
	const ok = "# TYPE a_total counter\na_total{x=\"1\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"
	if _, err := promtext.Parse(ok); err != nil {
		t.Fatalf("valid exposition refused: %v", err)
	}
	for name, text := range map[string]string{
		"no final newline":    strings.TrimSuffix(ok, "\n"),
		"empty line":          "\n" + ok,
		"untyped sample":      "a 1\n",
		"two TYPEs":           "# TYPE a_total counter\n" + ok,
		"TYPE after samples":  ok + "# TYPE a_total counter\n",
		"bad type":            "# TYPE a_total count\n",
		"split family":        ok + "a_total{x=\"2\"} 1\n",
		"duplicate series":    "# TYPE a_total counter\na_total 1\na_total 1\n",
		"bad escape":          "# TYPE a_total counter\na_total{x=\"\\t\"} 1\n",
		"unquoted value":      "# TYPE a_total counter\na_total{x=1} 1\n",
		"bad label name":      "# TYPE a_total counter\na_total{1x=\"1\"} 1\n",
		"reserved label":      "# TYPE a_total counter\na_total{__x=\"1\"} 1\n",
		"label twice":         "# TYPE a_total counter\na_total{x=\"1\",x=\"2\"} 1\n",
		"bad value":           "# TYPE a_total counter\na_total 1x\n",
		"two spaces":          "# TYPE a_total counter\na_total  1\n",
		"timestamp":           "# TYPE a_total counter\na_total 1 1700000000\n",
		"negative counter":    "# TYPE a_total counter\na_total -1\n",
		"counter not _total":  "# TYPE a counter\na 1\n",
		"no +Inf":             "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"count is not +Inf":   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
		"not cumulative":      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"le not ascending":    "# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"bucket without le":   "# TYPE h histogram\nh_bucket 1\n",
		"no _sum":             "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"other comment":       "# hello\n",
		"unterminated labels": "# TYPE a_total counter\na_total{x=\"1\" 1\n",
		"bad HELP escape":     "# HELP a_total a\\tb\n",
		"invalid utf-8":       "# TYPE a_total counter\na_total{x=\"\xff\"} 1\n",
		"bad metric name":     "# TYPE a-b counter\n",
	} {
		if _, err := promtext.Parse(text); err == nil {
			t.Errorf("%s: accepted %q", name, text)
		}
	}
}

// TestParseValues: a valid exposition's samples come out by ID, with escapes
// undone.
func TestParseValues(t *testing.T) {
	e, err := promtext.Parse(`# HELP a_total x \\ y\n
# TYPE a_total counter
a_total{b="q\"\n\\",a="1"} 2.5e3
# TYPE g gauge
g -Inf
`)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Value("a_total", "a", "1", "b", "q\"\n\\"); !ok || v != 2500 {
		t.Errorf("a_total: %v %v; samples %v", v, ok, e.Samples)
	}
	if v, ok := e.Value("g"); !ok || v > -1e308 {
		t.Errorf("g: %v %v", v, ok)
	}
	if e.Types["a_total"] != "counter" || e.Types["g"] != "gauge" {
		t.Errorf("types %v", e.Types)
	}
}

// FuzzParse: Parse never panics, and what it accepts it accepts again with
// the same samples.
func FuzzParse(f *testing.F) {
	f.Add("# TYPE a_total counter\na_total{x=\"1\"} 2\n")
	f.Add("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n")
	f.Add("# HELP a b\\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		e, err := promtext.Parse(text)
		if err != nil {
			return
		}
		again, err := promtext.Parse(text)
		if err != nil || len(again.Samples) != len(e.Samples) {
			t.Fatalf("second parse differs: %v", err)
		}
		if strings.Count(text, "\n") < len(e.Samples) {
			t.Fatalf("%d samples from %d lines", len(e.Samples), strings.Count(text, "\n"))
		}
	})
}
