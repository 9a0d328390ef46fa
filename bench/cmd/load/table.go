package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

var labels = map[string]string{
	"nethttp":   "net/http alone: read the body, answer (checks nothing)",
	"bare":      "bare: HMAC + action scan (net/http, no library)",
	"raw":       "forgehooks middleware, raw handler",
	"typed":     "forgehooks middleware, typed handler (OnPushEvent)",
	"go-github": "go-github: ValidatePayload + ParseWebHook",
	"serve":     "`forgehooks serve` (logs a line per delivery)",
}

func med(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// ratio is the median over rounds of a's CPU per request over b's, or 0.
func ratio(results map[string][]result, a, b string) float64 {
	ra, rb := results[a], results[b]
	var v []result
	for k := 0; k < len(ra) && k < len(rb); k++ {
		if rb[k].cpu > 0 {
			v = append(v, result{cpu: ra[k].cpu / rb[k].cpu})
		}
	}
	if len(v) == 0 {
		return 0
	}
	return med(v, func(r result) float64 { return r.cpu })
}

func render(order []string, results map[string][]result, name string, size int, cfg config, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Payload %s (%d bytes), %d connections, up to %d requests or %s per receiver after %d warm-up requests, %d round(s); medians of the rounds. Each receiver is its own process with GOMAXPROCS=1; server CPU is its user+system time from /proc/<pid>/stat over the measured requests.\n\n",
		name, size, cfg.c, cfg.n, cfg.duration, cfg.warmup, rounds)
	fmt.Fprintln(&b, "| receiver | requests/s | p50 µs | p99 µs | server CPU µs/request | × bare |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|")
	for _, s := range order {
		rs := results[s]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.1f | %.2f× |\n", labels[s],
			med(rs, func(r result) float64 { return r.rps }),
			med(rs, func(r result) float64 { return r.p50 }),
			med(rs, func(r result) float64 { return r.p99 }),
			med(rs, func(r result) float64 { return r.cpu }),
			ratio(results, s, "bare"))
	}
	fmt.Fprintln(&b)
	type target struct {
		what  string
		a, b  string
		bound float64
	}
	ts := []target{
		{"4: raw ≤ 1.4× bare (server CPU per request)", "raw", "bare", 1.4},
		{"4: typed ≤ 0.5× go-github", "typed", "go-github", 0.5},
	}
	fmt.Fprintln(&b, "| target | ratio | met |")
	fmt.Fprintln(&b, "|---|---:|---|")
	for _, t := range ts {
		r := ratio(results, t.a, t.b)
		if r == 0 {
			continue
		}
		met := "yes"
		if r > t.bound {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %.2f× | %s |\n", t.what, r, met)
	}
	for _, s := range []string{"raw", "typed"} {
		if rs, ok := results[s]; ok {
			c := med(rs, func(r result) float64 { return r.cpu })
			met := "yes"
			if c >= 50 {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| 4: %s below the Node.js library's ~50 µs | %.1f µs | %s |\n", s, c, met)
		}
	}
	fmt.Fprintln(&b)
	return b.String()
}

// replaceSection replaces the text between "<!-- name:begin -->" and
// "<!-- name:end -->" in the file.
func replaceSection(path, name, text string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	i, j := strings.Index(string(old), begin), strings.Index(string(old), end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, strings.TrimSpace(begin), end)
	}
	out := string(old[:i+len(begin)]) + text + string(old[j:])
	return os.WriteFile(path, []byte(out), 0o644)
}
