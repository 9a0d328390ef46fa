// Command testreport reads the output of `go test -json` on its standard
// input and writes what `go test` without -json would have written (a line
// per package, and the output of the tests that failed), then the time each
// package took and the slowest tests. It exits with status 1 when a package
// or a test failed, or a package did not build, so that `make test` still
// fails then.
//
//	go test -json ./... | go run ./internal/testreport
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	r := report{out: os.Stdout, slowest: 10, load: func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return loadAverage(string(b))
	}}
	failed, err := r.run(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// loadAverage is the first three fields of /proc/loadavg, or "" when they
// cannot be read (another system).
func loadAverage(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// event is one line of `go test -json` (cmd/test2json), with the fields
// `go test` adds for build failures.
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output, build-fail
}

// line is a line of output and its place in the stream: the output kept for
// a package is printed in the order it came.
type line struct {
	n    int
	text string
}

// pkgState is what is kept of a package until it ends.
type pkgState struct {
	own   []line            // output of the package itself, not of a test
	tests map[string][]line // output of the tests not yet passed or skipped
}

// timing is the time a package or a test took.
type timing struct {
	pkg, test string
	elapsed   time.Duration
}

// report turns a stream of test events into go test's own lines and a table
// of times. The zero value writes nothing: out must be set.
type report struct {
	out     io.Writer
	slowest int           // how many tests the table of the slowest lists
	load    func() string // the load average at the end, for the table's heading; nil or "" for none

	n        int
	pkgs     map[string]*pkgState
	pkgTimes []timing
	tests    []timing
	failed   []string // packages that failed, in the order they ended
}

// run reads events from r until its end, writing each package's lines when
// it ends and the tables at the end. It reports whether anything failed; the
// error is one of reading r.
func (p *report) run(r io.Reader) (failed bool, err error) {
	p.pkgs = map[string]*pkgState{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		b := sc.Bytes()
		var e event
		if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
			// Not an event: go test itself writes some errors as text.
			fmt.Fprintf(p.out, "%s\n", b)
			continue
		}
		p.event(e)
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	// Packages that never ended: the stream was cut (go test killed).
	for _, name := range slices.Sorted(maps.Keys(p.pkgs)) {
		p.flush(name, p.pkgs[name], true)
		fmt.Fprintf(p.out, "FAIL\t%s\t(no result: the output ended first)\n", name)
		p.failed = append(p.failed, name)
	}
	p.tables()
	return len(p.failed) > 0, nil
}

func (p *report) state(pkg string) *pkgState {
	s := p.pkgs[pkg]
	if s == nil {
		s = &pkgState{tests: map[string][]line{}}
		p.pkgs[pkg] = s
	}
	return s
}

func (p *report) event(e event) {
	p.n++
	switch e.Action {
	case "build-output":
		// Compiler errors: printed as they come, as go test does.
		io.WriteString(p.out, e.Output)
		return
	case "build-fail":
		// Each package that needed it ends with "fail" and says so.
		return
	case "start":
		p.state(e.Package)
		return
	}
	if e.Package == "" {
		return
	}
	s := p.state(e.Package)
	switch {
	case e.Action == "output" && e.Test == "":
		s.own = append(s.own, line{p.n, e.Output})
	case e.Action == "output":
		s.tests[e.Test] = append(s.tests[e.Test], line{p.n, e.Output})
	case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
		delete(s.tests, e.Test)
		p.testTime(e)
	case e.Test != "" && e.Action == "fail":
		p.testTime(e)
	case e.Test == "" && (e.Action == "pass" || e.Action == "skip" || e.Action == "fail"):
		fail := e.Action == "fail"
		p.flush(e.Package, s, fail)
		delete(p.pkgs, e.Package)
		if fail {
			p.failed = append(p.failed, e.Package)
		}
		if e.Action != "skip" || e.Elapsed > 0 {
			p.pkgTimes = append(p.pkgTimes, timing{pkg: e.Package, elapsed: seconds(e.Elapsed)})
		}
	}
}

// testTime records a top-level test's time: a subtest's is in its parent's.
func (p *report) testTime(e event) {
	if !strings.Contains(e.Test, "/") {
		p.tests = append(p.tests, timing{pkg: e.Package, test: e.Test, elapsed: seconds(e.Elapsed)})
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// flush writes what go test without -v writes of a package that ended: for
// a package that passed, its closing line; for one that failed, the output
// of each test that failed or never ended (a timeout, a panic) and its own,
// in the order it came.
func (p *report) flush(name string, s *pkgState, failed bool) {
	var lines []line
	for _, l := range s.own {
		// go test -json reports the tests' "PASS" line, which go test
		// without -v leaves out.
		if !failed && l.text == "PASS\n" {
			continue
		}
		lines = append(lines, l)
	}
	if failed {
		for _, ls := range s.tests {
			lines = append(lines, ls...)
		}
	}
	slices.SortFunc(lines, func(a, b line) int { return cmp.Compare(a.n, b.n) })
	for _, l := range lines {
		io.WriteString(p.out, l.text)
	}
}

// tables writes the packages' times, the slowest tests, and again the
// packages that failed, so that the closing lines say whether all passed.
func (p *report) tables() {
	if len(p.pkgTimes) == 0 {
		return
	}
	byTime := func(a, b timing) int {
		return cmp.Or(cmp.Compare(b.elapsed, a.elapsed), cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test))
	}
	slices.SortFunc(p.pkgTimes, byTime)
	slices.SortFunc(p.tests, byTime)
	var total time.Duration
	for _, t := range p.pkgTimes {
		total += t.elapsed
	}
	heading := "package times"
	if p.load != nil {
		if l := p.load(); l != "" {
			heading += " (load average at the end: " + l + ")"
		}
	}
	fmt.Fprintf(p.out, "\n%s:\n", heading)
	for _, t := range p.pkgTimes {
		if t.elapsed > 0 {
			fmt.Fprintf(p.out, "%10s  %s\n", round(t.elapsed), t.pkg)
		}
	}
	fmt.Fprintf(p.out, "%10s  summed (packages run in parallel: more than the time it took)\n", round(total))
	if n := min(p.slowest, len(p.tests)); n > 0 {
		fmt.Fprintf(p.out, "\nslowest %d tests:\n", n)
		for _, t := range p.tests[:n] {
			fmt.Fprintf(p.out, "%10s  %s %s\n", round(t.elapsed), t.pkg, t.test)
		}
	}
	if len(p.failed) > 0 {
		fmt.Fprintln(p.out)
		for _, name := range p.failed {
			fmt.Fprintf(p.out, "FAIL\t%s\n", name)
		}
	}
}

func round(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
