package sourceip_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: package sourceip depends on the standard library
// alone, so that any receiver can put it in front of its endpoint.
func TestStandardLibraryOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "forgehooks.dev/forgehooks/sourceip").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "forgehooks.dev/forgehooks/sourceip" {
			t.Errorf("sourceip depends on %s", p)
		}
	}
}
