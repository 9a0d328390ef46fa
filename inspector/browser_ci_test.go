package inspector_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBrowserRequiredInCI runs a browser test again, in this test binary,
// with a browser that cannot start: under CI=true it must fail, elsewhere
// skip.
func TestBrowserRequiredInCI(t *testing.T) {
	t.Parallel()
	if os.Getenv("INSPECTOR_CI_PROBE") != "" {
		t.Skip("inside the probe")
	}
	for _, tc := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"true", true, "CI=true: the browser tests must run"},
		{"", false, "SKIP: TestBrowserPaging"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBrowserPaging$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "CI="+tc.ci, "CHROMIUM=/nonexistent/chromium", "INSPECTOR_CI_PROBE=1")
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail || !strings.Contains(string(out), tc.want) {
			t.Errorf("CI=%q: err %v, want failure %v and %q in:\n%s", tc.ci, err, tc.wantFail, tc.want, out)
		}
	}
}
