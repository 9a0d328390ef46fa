package inspector_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies: the inspector imports the standard library and the
// module's runtime packages, never payloads itself (huge, generated: the
// type names come by rule or through Options.TypeName), and nothing outside
// the module gets in (no NATS; chromedp is for the tests only).
func TestDependencies(t *testing.T) {
	t.Parallel()
	list := func(format string) []string {
		out, err := exec.Command("go", "list", "-deps="+format[:1], "-f", format[1:], "forgehooks.dev/forgehooks/inspector").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	allowed := map[string]bool{
		"forgehooks.dev/forgehooks/webhooks": true, "forgehooks.dev/forgehooks/emitter": true,
		"forgehooks.dev/forgehooks/internal/jsonscan": true, "forgehooks.dev/forgehooks/internal/clip": true,
		"forgehooks.dev/forgehooks/internal/goname": true, "forgehooks.dev/forgehooks/internal/bound": true,
		"forgehooks.dev/forgehooks/internal/sse": true,
		"forgehooks.dev/forgehooks/delivery":     true,
	}
	for _, p := range list(`f{{join .Imports " "}}`) {
		if strings.Contains(p, ".") && !allowed[p] {
			t.Errorf("inspector imports %s", p)
		}
	}
	for _, p := range list(`t{{if not .Standard}}{{.ImportPath}}{{end}}`) {
		if !strings.HasPrefix(p, "forgehooks.dev/forgehooks/") {
			t.Errorf("inspector depends on %s, outside the module", p)
		}
	}
}
