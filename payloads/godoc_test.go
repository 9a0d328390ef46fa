package payloads_test

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestGoDocShowsFields: go doc of a type of package payloads (an alias of a
// type of an internal package) prints its fields, with Go type and JSON key,
// and its methods, as the generated alias's doc lists them.
func TestGoDocShowsFields(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, tc := range []struct {
		typ  string
		want []string
	}{
		{"PushEvent", []string{`\n\s+Ref\s+string\s+"ref" required\n`, `\n\s+HeadCommit\s+\*Commit\s+"head_commit" required, nullable\n`, `\n\s+GetInstallation\(\) \*SimpleInstallation\n`}},
		{"PullRequestEvent", []string{`\n\s+GetInstallation\(\) \*SimpleInstallation\n`, `\n\s+GetAction\(\) string\n`}},
		{"SimpleInstallation", []string{`\n\s+ID\s+int64\s+"id" required\n`, `\n\s+GetID\(\) int64\n`}},
	} {
		out, err := exec.Command("go", "doc", "forgehooks.dev/forgehooks/payloads", tc.typ).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %s: %v\n%s", tc.typ, err, out)
		}
		for _, w := range tc.want {
			if !regexp.MustCompile(w).Match(out) {
				t.Errorf("go doc %s lacks %s:\n%s", tc.typ, w, out)
			}
		}
	}
}
