package webhookstest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: webhookstest depends on the standard library and
// the module's own packages alone, and does not import the generated payloads
// itself: users who test raw handlers need not compile them.
func TestStandardLibraryOnly(t *testing.T) {
	const pkg = "forgehooks.dev/forgehooks/webhookstest"
	deps := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
	if len(deps) < 2 {
		t.Fatalf("go list found %v: not what this test expects", deps)
	}
	for _, p := range deps {
		if !strings.HasPrefix(p, "forgehooks.dev/forgehooks/") {
			t.Errorf("webhookstest depends on %s, outside the standard library", p)
		}
	}
	for _, p := range goList(t, "-f", "{{join .Imports \"\\n\"}}", pkg) {
		if p == "forgehooks.dev/forgehooks/payloads" {
			t.Error("webhookstest imports payloads")
		}
	}
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
