package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// events encodes test events as go test -json writes them, one a line.
func events(t *testing.T, es ...event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range es {
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func out(pkg, test, text string) event {
	return event{Action: "output", Package: pkg, Test: test, Output: text}
}

func end(action, pkg, test string, elapsed float64) event {
	return event{Action: action, Package: pkg, Test: test, Elapsed: elapsed}
}

func TestReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		failed  bool
		has     []string // in the report, in this order
		hasNot  []string
		slowest int
		load    string
	}{
		{
			name: "a package passes",
			in: events(t,
				event{Action: "start", Package: "p"},
				out("p", "TestA", "=== RUN   TestA\n"),
				out("p", "TestA", "    a_test.go:1: chatter\n"),
				out("p", "TestA", "--- PASS: TestA (1.50s)\n"),
				end("pass", "p", "TestA", 1.5),
				out("p", "", "PASS\n"),
				out("p", "", "ok  \tp\t1.52s\n"),
				end("pass", "p", "", 1.52),
			),
			load:   "1.00 2.00 3.00",
			has:    []string{"ok  \tp\t1.52s\n", "package times (load average at the end: 1.00 2.00 3.00)", "1.52s  p\n", "slowest 1 tests:", "1.50s  p TestA\n"},
			hasNot: []string{"chatter", "PASS\n", "FAIL"},
		},
		{
			name: "a subtest fails among passing ones, beside a passing package",
			in: events(t,
				out("q", "TestB", "=== RUN   TestB\n"),
				out("p", "TestA", "=== RUN   TestA\n"),
				out("p", "TestA/ok", "=== RUN   TestA/ok\n"),
				out("p", "TestA/ok", "    a_test.go:1: ok chatter\n"),
				end("pass", "p", "TestA/ok", 0.1),
				out("p", "TestA/bad", "=== RUN   TestA/bad\n"),
				out("p", "TestA/bad", "    a_test.go:2: the reason\n"),
				out("p", "TestA/bad", "    --- FAIL: TestA/bad (0.20s)\n"),
				end("fail", "p", "TestA/bad", 0.2),
				out("p", "TestA", "--- FAIL: TestA (0.30s)\n"),
				end("fail", "p", "TestA", 0.3),
				out("q", "TestB", "--- PASS: TestB (2.00s)\n"),
				end("pass", "q", "TestB", 2),
				out("q", "", "ok  \tq\t2.01s\n"),
				end("pass", "q", "", 2.01),
				out("p", "", "FAIL\n"),
				out("p", "", "FAIL\tp\t0.31s\n"),
				end("fail", "p", "", 0.31),
			),
			failed: true,
			has: []string{"ok  \tq\t2.01s\n", "=== RUN   TestA\n", "a_test.go:2: the reason", "--- FAIL: TestA/bad", "--- FAIL: TestA (0.30s)", "FAIL\tp\t0.31s\n",
				"2.01s  q\n", "slowest 2 tests:", "2.00s  q TestB\n", "0.30s  p TestA\n", "\nFAIL\tp\n"},
			hasNot: []string{"ok chatter", "TestA/ok", "TestA/bad\n     "},
		},
		{
			name: "a test that never ended: a timeout's panic",
			in: events(t,
				out("p", "TestHangs", "=== RUN   TestHangs\n"),
				out("p", "TestHangs", "    h_test.go:3: waiting\n"),
				out("p", "", "panic: test timed out after 1s\n"),
				out("p", "", "FAIL\tp\t1.00s\n"),
				end("fail", "p", "", 1),
			),
			failed: true,
			has:    []string{"=== RUN   TestHangs\n", "h_test.go:3: waiting", "panic: test timed out after 1s", "FAIL\tp\t1.00s\n", "\nFAIL\tp\n"},
		},
		{
			name: "the output ends before the package",
			in: events(t,
				out("p", "TestA", "=== RUN   TestA\n"),
				out("p", "TestA", "    a_test.go:1: last words\n"),
			),
			failed: true,
			has:    []string{"last words", "FAIL\tp\t(no result: the output ended first)"},
		},
		{
			name: "a package that does not build, and go test's own text",
			in: "go: warning: something said as text\n" + events(t,
				event{Action: "build-output", ImportPath: "p [p.test]", Output: "# p [p.test]\n"},
				event{Action: "build-output", ImportPath: "p [p.test]", Output: "p_test.go:6:14: cannot use x\n"},
				event{Action: "build-fail", ImportPath: "p [p.test]"},
				event{Action: "start", Package: "p"},
				out("p", "", "FAIL\tp [build failed]\n"),
				end("fail", "p", "", 0),
			),
			failed: true,
			has:    []string{"go: warning: something said as text\n", "# p [p.test]\np_test.go:6:14: cannot use x\n", "FAIL\tp [build failed]\n"},
		},
		{
			name: "packages without tests",
			in: events(t,
				out("p", "", "?   \tp\t[no test files]\n"),
				end("skip", "p", "", 0),
			),
			has:    []string{"?   \tp\t[no test files]\n"},
			hasNot: []string{"package times"},
		},
		{
			name:    "only the slowest are listed, subtests not among them",
			slowest: 2,
			in: events(t,
				end("pass", "p", "TestA", 1),
				end("pass", "p", "TestA/sub", 0.9),
				end("pass", "p", "TestB", 3),
				end("pass", "p", "TestC", 2),
				out("p", "", "ok  \tp\t6.00s\n"),
				end("pass", "p", "", 6),
			),
			has:    []string{"slowest 2 tests:\n     3.00s  p TestB\n     2.00s  p TestC\n"},
			hasNot: []string{"TestA"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			r := report{out: &b, slowest: cmp.Or(tt.slowest, 10), load: func() string { return tt.load }}
			failed, err := r.run(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if failed != tt.failed {
				t.Errorf("failed = %v, want %v; report:\n%s", failed, tt.failed, got)
			}
			rest := got
			for _, s := range tt.has {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("report lacks %q (after what came before it); report:\n%s", s, got)
					continue
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tt.hasNot {
				if strings.Contains(got, s) {
					t.Errorf("report has %q; report:\n%s", s, got)
				}
			}
		})
	}
}

// TestReportOfGoTest reads what go test -json really writes, of the module in
// testdata/fixture: a package that passes, one with a failing subtest, one
// that does not build, and one with a slow test.
func TestReportOfGoTest(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "test", "-count=1", "-json", "./...")
	cmd.Dir = filepath.Join("testdata", "fixture")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stream, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("go test: %v\n%s", err, stderr.Bytes())
	}
	var b bytes.Buffer
	failed, err := (&report{out: &b, slowest: 10}).run(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if !failed {
		t.Errorf("a failing test and a broken build reported as passing:\n%s", got)
	}
	for _, s := range []string{
		"ok  \tfixture/pass\t",
		"ok  \tfixture/slow\t",
		"fail_test.go:11: the failure message",
		"--- FAIL: TestFails/sub_fails",
		"--- FAIL: TestFails",
		"FAIL\tfixture/fail\t",
		`cannot use "not a number"`,
		"FAIL\tfixture/broken [build failed]",
		"package times",
		"fixture/slow TestSlow",
		"\nFAIL\tfixture/fail\n",
	} {
		if !strings.Contains(got, s) {
			t.Errorf("report lacks %q:\n%s", s, got)
		}
	}
	for _, s := range []string{"a log line of a test that passes", "a passing subtest", "--- PASS"} {
		if strings.Contains(got, s) {
			t.Errorf("report has %q, the output of a test that passed:\n%s", s, got)
		}
	}
	// The slowest test comes first.
	_, table, _ := strings.Cut(got, "slowest ")
	if rows := strings.Split(table, "\n"); len(rows) < 2 || !strings.Contains(rows[1], "fixture/slow TestSlow") {
		t.Errorf("TestSlow is not first among the slowest:\n%s", got)
	}
}
