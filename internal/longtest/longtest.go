// Package longtest gates the tests too heavy for `make test`: soak, scale and
// attack runs that take minutes each on a 2-core machine. They run under
// `make test-long`, which sets FORGEHOOKS_LONG=1; `make test` skips them, so
// that it stays within its ten minutes. For tests only.
package longtest

import (
	"os"
	"testing"
)

// Env is the variable that turns the long tests on when it is "1".
const Env = "FORGEHOOKS_LONG"

// Enabled reports whether the long tests run: Env is "1".
func Enabled() bool { return os.Getenv(Env) == "1" }

// Require skips t unless the long tests run. why says what makes the test
// long; the skip message names it and how to run the test.
func Require(t testing.TB, why string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("long test (%s): run it with make test-long, or %s=1", why, Env)
	}
}
