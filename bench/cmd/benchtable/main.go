// Command benchtable turns the output of several `go test -bench` runs (rounds)
// into the markdown tables of bench/README.md: per benchmark the median of the
// rounds, their spread, and ratios computed within each round, then their
// median, so that a change of machine load between rounds cancels out.
//
//	benchtable -in results/rounds.txt -readme README.md
//
// It replaces the text between "<!-- benchtable:begin -->" and
// "<!-- benchtable:end -->" in the README (or prints the tables without -readme).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// sample is one benchmark line.
type sample struct {
	ns, bytes, allocs float64
}

// rounds holds, per benchmark name, its samples in order of appearance: the
// k-th sample of every benchmark comes from round k.
type rounds struct {
	names   []string
	samples map[string][]sample
	header  []string // goos, goarch, cpu lines of the first round
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

func parse(r io.Reader) (*rounds, error) {
	rs := &rounds{samples: map[string][]sample{}}
	sc := bufio.NewScanner(r)
	seen := map[string]bool{}
	for sc.Scan() {
		t := sc.Text()
		if strings.HasPrefix(t, "cpu:") || strings.HasPrefix(t, "goos:") || strings.HasPrefix(t, "goarch:") {
			if !seen[t] {
				seen[t] = true
				rs.header = append(rs.header, t)
			}
			continue
		}
		m := line.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		s := sample{ns: ns, bytes: metric(m[3], "B/op"), allocs: metric(m[3], "allocs/op")}
		if _, ok := rs.samples[m[1]]; !ok {
			rs.names = append(rs.names, m[1])
		}
		rs.samples[m[1]] = append(rs.samples[m[1]], s)
	}
	return rs, sc.Err()
}

// metric finds "value unit" in the rest of a benchmark line.
func metric(rest, unit string) float64 {
	f := strings.Fields(rest)
	for i := 1; i < len(f); i++ {
		if f[i] == unit {
			v, _ := strconv.ParseFloat(f[i-1], 64)
			return v
		}
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is (max-min)/median, in percent.
func spread(v []float64) float64 {
	m := median(v)
	if m == 0 {
		return 0
	}
	return 100 * (slices.Max(v) - slices.Min(v)) / m
}

func (rs *rounds) ns(name string) []float64 {
	var out []float64
	for _, s := range rs.samples[name] {
		out = append(out, s.ns)
	}
	return out
}

// ratio is, per round, a's time over b's; nil when either is missing.
func (rs *rounds) ratio(a, b string) []float64 {
	sa, sb := rs.samples[a], rs.samples[b]
	var out []float64
	for k := 0; k < len(sa) && k < len(sb); k++ {
		if sb[k].ns > 0 {
			out = append(out, sa[k].ns/sb[k].ns)
		}
	}
	return out
}

// group is one benchmark function's table: its rows, and the row every ratio
// is taken against.
type group struct {
	prefix, base, title string
}

var groups = []group{
	{"BenchmarkDelivery/", "BenchmarkDelivery/impl=floor-hmac", "Per delivery (verify, validate, route or parse), over the payloads every peer accepts"},
	{"BenchmarkDecode/", "BenchmarkDecode/impl=forgehooks", "Typed decoding alone, over the whole corpus"},
	{"BenchmarkLarge/", "BenchmarkLarge/impl=floor-hmac", "One 25 MiB delivery"},
}

func (rs *rounds) table(w io.Writer, g group) {
	var rows []string
	for _, n := range rs.names {
		if strings.HasPrefix(n, g.prefix) {
			rows = append(rows, n)
		}
	}
	if len(rows) == 0 {
		return
	}
	base := strings.TrimPrefix(g.base, g.prefix)
	fmt.Fprintf(w, "%s (%s):\n\n", g.title, strings.TrimSuffix(g.prefix, "/"))
	fmt.Fprintf(w, "| implementation | µs/op (median) | spread | × %s (median of rounds) | B/op | allocs/op |\n", base)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, n := range rows {
		ns := rs.ns(n)
		var bs, as []float64
		for _, s := range rs.samples[n] {
			bs = append(bs, s.bytes)
			as = append(as, s.allocs)
		}
		r := median(rs.ratio(n, g.base))
		fmt.Fprintf(w, "| %s | %s | ±%.0f%% | %.2f× | %s | %s |\n",
			strings.TrimPrefix(n, g.prefix), us(median(ns)), spread(ns)/2, r, num(median(bs)), num(median(as)))
	}
	fmt.Fprintln(w)
}

func us(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.0f", ns/1e3)
	case ns >= 1e4:
		return fmt.Sprintf("%.1f", ns/1e3)
	}
	return fmt.Sprintf("%.2f", ns/1e3)
}

func num(v float64) string {
	if v >= 1<<20 {
		return fmt.Sprintf("%.1f Mi", v/(1<<20))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// targets states the targets that these benchmarks measure, with the
// figure of this run.
func (rs *rounds) targets(w io.Writer) {
	type target struct {
		what   string
		a, b   string
		bound  float64
		atMost bool
	}
	ts := []target{
		{"2: forgehooks-raw ≤ 2.5× floor-hmac", "BenchmarkDelivery/impl=forgehooks-raw", "BenchmarkDelivery/impl=floor-hmac", 2.5, true},
		{"46: forgehooks-raw ≤ 2.0× floor-hmac", "BenchmarkDelivery/impl=forgehooks-raw", "BenchmarkDelivery/impl=floor-hmac", 2.0, true},
		{"2: go-github ≥ 6× forgehooks-raw", "BenchmarkDelivery/impl=go-github", "BenchmarkDelivery/impl=forgehooks-raw", 6, false},
		{"3: encoding-json ≥ 3× forgehooks (typed decode)", "BenchmarkDecode/impl=encoding-json", "BenchmarkDecode/impl=forgehooks", 3, false},
	}
	fmt.Fprintln(w, "| target | ratio (median of rounds) | min–max over rounds | met |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, t := range ts {
		r := rs.ratio(t.a, t.b)
		if len(r) == 0 {
			continue
		}
		m := median(r)
		met := m >= t.bound
		if t.atMost {
			met = m <= t.bound
		}
		yes := "yes"
		if !met {
			yes = "**no**"
		}
		fmt.Fprintf(w, "| %s | %.2f× | %.2f–%.2f× | %s |\n", t.what, m, slices.Min(r), slices.Max(r), yes)
	}
	fmt.Fprintln(w)
}

func main() {
	in := flag.String("in", "", "file with the output of the rounds (default stdin)")
	readme := flag.String("readme", "", "README whose benchtable section to replace (default: print)")
	cmd := flag.String("cmd", "make bench-peers", "the command to name in the README")
	flag.Parse()
	var r io.Reader = os.Stdin
	if *in != "" {
		f, err := os.Open(*in)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		r = f
	}
	rs, err := parse(r)
	if err != nil {
		fail(err)
	}
	if len(rs.names) == 0 {
		fail(fmt.Errorf("no benchmark lines in the input"))
	}
	var b strings.Builder
	n := 0
	for _, s := range rs.samples {
		n = max(n, len(s))
	}
	fmt.Fprintf(&b, "Made by `%s`: %d rounds of every benchmark, one after another (%s, %s).\n",
		*cmd, n, strings.TrimSpace(strings.TrimPrefix(strings.Join(rs.header, "; "), "")), runtime.Version())
	fmt.Fprintf(&b, "µs/op is the median of the rounds and spread half their range; ratios are taken within each round, then their median.\n\n")
	rs.targets(&b)
	for _, g := range groups {
		rs.table(&b, g)
	}
	if *readme == "" {
		fmt.Print(b.String())
		return
	}
	old, err := os.ReadFile(*readme)
	if err != nil {
		fail(err)
	}
	const begin, end = "<!-- benchtable:begin -->\n", "<!-- benchtable:end -->"
	i, j := strings.Index(string(old), begin), strings.Index(string(old), end)
	if i < 0 || j < i {
		fail(fmt.Errorf("%s has no %q ... %q section", *readme, strings.TrimSpace(begin), end))
	}
	out := string(old[:i+len(begin)]) + b.String() + string(old[j:])
	if err := os.WriteFile(*readme, []byte(out), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}
