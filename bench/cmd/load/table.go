package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
)

var labels = map[string]string{
	"nethttp":          "net/http alone: read the body, answer (checks nothing)",
	"bare":             "bare: HMAC + action scan (net/http, no library)",
	"raw":              "forgehooks middleware, raw handler",
	"typed":            "forgehooks middleware, typed handler (OnPushEvent)",
	"typed-all":        "forgehooks middleware, a typed handler for every event (On…Event)",
	"go-github":        "go-github: ValidatePayload + ParseWebHook",
	"node":             "Node.js library (@octokit/webhooks)", // replaced by setupNode's label, with versions
	"serve":            "`forgehooks serve` (logs a line per delivery)",
	"jsfloor":          "JetStream floor: HMAC, publish to an embedded file stream, 200 after its ack; a consumer fetches and acks",
	"inbox":            "forgehooks middleware with a durable inbox, raw handler run by its workers (serve --inbox without its log)",
	"serve-base":       "`forgehooks serve`, the -baseline binary",
	"serve-inbox-base": "`forgehooks serve --inbox`, the -baseline binary",
	"serve-inbox":      "`forgehooks serve --inbox` (202 once stored; 4 workers run the deliveries)",
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

// times writes a ratio, or "—" when there is none (0: a row not run).
func times(r float64) string {
	if r == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", r)
}

// ratio is the median over rounds of a's CPU per request over b's, or 0.
func ratio(results map[string][]result, a, b string) float64 {
	v := ratios(results, a, b)
	if len(v) == 0 {
		return 0
	}
	return med(v, func(r result) float64 { return r.cpu })
}

// ratios are a's CPU per request over b's, one per round, in the cpu field.
func ratios(results map[string][]result, a, b string) []result {
	ra, rb := results[a], results[b]
	var v []result
	for k := 0; k < len(ra) && k < len(rb); k++ {
		if rb[k].cpu > 0 {
			v = append(v, result{cpu: ra[k].cpu / rb[k].cpu})
		}
	}
	return v
}

// render writes the tables of a load run. nr is the Node.js receiver when the
// node row was asked for (nil otherwise), to say why it is missing when it is.
func render(order []string, results map[string][]result, name string, size int, cfg config, rounds int, nr *nodeReceiver) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Payload %s (%d bytes), %d connections, up to %d requests or %s per receiver after %d warm-up requests, %d round(s); medians of the rounds, and ratios taken within each round, then their median. Each Go receiver is its own process with GOMAXPROCS=1; the Node.js one is one node process (JavaScript on one thread, V8's helper threads beside it). Server CPU is the process's user+system time, all its threads, from /proc/<pid>/stat over the measured requests and until the process is idle again afterwards (a durable receiver's workers may still run the deliveries it stored); its user part (the receiver's own code, the Go runtime or V8, and the HTTP library; system time is the kernel's sockets and scheduling) is shown beside it, and the ratios are of the whole. Sleeps are the times per request that the receiver's threads blocked (voluntary context switches): a receiver that waits for the load generator sleeps and is woken, at a cost in system time, where one that always has a request queued does not. The load generator writes each request as one buffer made ahead and reads the answer with http.ReadResponse, so that it keeps even the fastest receiver busy.\n\n",
		name, size, cfg.c, cfg.n, cfg.duration, cfg.warmup, rounds)
	if serverCPU >= 0 {
		fmt.Fprintf(&b, "Every receiver ran pinned to CPU %d (taskset), the load generator on the others.\n\n", serverCPU)
	} else {
		b.WriteString("The receivers and the load generator shared every CPU (not pinned).\n\n")
	}
	_, withNode := results["node"]
	_, withGoGitHub := results["go-github"]
	head, rule := "| receiver | requests/s | p50 µs | p99 µs | server CPU µs/request | of it user | sleeps/request | × bare |", "|---|---:|---:|---:|---:|---:|---:|---:|"
	// × go-github beside every row: bare's is the least a receiver that
	// verifies and reads its deliveries can reach on the machine.
	if withGoGitHub {
		head, rule = head+" × go-github |", rule+"---:|"
	}
	if withNode {
		head, rule = head+" × Node.js |", rule+"---:|"
	}
	fmt.Fprintln(&b, head)
	fmt.Fprintln(&b, rule)
	for _, s := range order {
		rs := results[s]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %s |", labels[s],
			med(rs, func(r result) float64 { return r.rps }),
			med(rs, func(r result) float64 { return r.p50 }),
			med(rs, func(r result) float64 { return r.p99 }),
			med(rs, func(r result) float64 { return r.cpu }),
			med(rs, func(r result) float64 { return r.user }),
			med(rs, func(r result) float64 { return r.sleeps }),
			times(ratio(results, s, "bare")))
		if withGoGitHub {
			fmt.Fprintf(&b, " %.2f× |", ratio(results, s, "go-github"))
		}
		if withNode {
			fmt.Fprintf(&b, " %.2f× |", ratio(results, s, "node"))
		}
		fmt.Fprintln(&b)
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
		{"32: typed ≤ 0.40× go-github", "typed", "go-github", 0.40},
		// Below the Node.js library: measured in the same run, since absolute
		// figures from another machine say nothing here.
		{"4: raw below the Node.js library", "raw", "node", 1},
		{"4: typed below the Node.js library", "typed", "node", 1},
		// Issue 46's, for the peer configuration (make bench-load's second
		// run): a bot with a typed handler for every event.
		{"46: typed-all ≤ 1.3× bare", "typed-all", "bare", 1.3},
		{"46: raw ≤ 1.2× bare", "raw", "bare", 1.2},
		{"46: typed-all ≤ 0.40× go-github", "typed-all", "go-github", 0.40},
		// Issue 43's, at one core, where requests/s goes as the inverse of
		// CPU per request: serve --inbox at ≥ 0.5× serve's and ≥ 0.8× the
		// JetStream floor's deliveries/s.
		{"43: serve --inbox ≥ 0.5× serve (CPU ≤ 2× serve's)", "serve-inbox", "serve", 2},
		{"43: serve --inbox ≥ 0.8× the JetStream floor (CPU ≤ 1.25× jsfloor's)", "serve-inbox", "jsfloor", 1.25},
		{"43: the inbox in process ≥ 0.8× the JetStream floor (CPU ≤ 1.25× jsfloor's)", "inbox", "jsfloor", 1.25},
		{"serve --inbox below the -baseline binary's", "serve-inbox", "serve-inbox-base", 1},
	}
	// The spread over rounds says how far from its bound a ratio is: load
	// from elsewhere on a shared machine moves single rounds.
	fmt.Fprintln(&b, "| target | ratio (median of rounds) | min–max over rounds | met |")
	fmt.Fprintln(&b, "|---|---:|---:|---|")
	for _, t := range ts {
		r := ratio(results, t.a, t.b)
		if r == 0 {
			continue
		}
		met := "yes"
		if r > t.bound || t.bound == 1 && r >= 1 { // "below" is strict
			met = "**no**"
		}
		v := ratios(results, t.a, t.b)
		lo := slices.MinFunc(v, func(x, y result) int { return cmp.Compare(x.cpu, y.cpu) }).cpu
		hi := slices.MaxFunc(v, func(x, y result) int { return cmp.Compare(x.cpu, y.cpu) }).cpu
		fmt.Fprintf(&b, "| %s | %.2f× | %.2f–%.2f× | %s |\n", t.what, r, lo, hi, met)
	}
	if nr != nil && nr.skipped != "" {
		fmt.Fprintf(&b, "| 4: raw and typed below the Node.js library | not measured: %s | | — |\n", nr.skipped)
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
