package inbox

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimePackagesImportNoNATS: the runtime packages stay standard
// library only; NATS lives in inbox and cmd.
func TestRuntimePackagesImportNoNATS(t *testing.T) {
	pkgs := []string{"signing", "emitter", "payloads", "webhooks"}
	for _, p := range pkgs {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "forgehooks.dev/forgehooks/"+p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", p, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "nats-io") || strings.HasSuffix(dep, "/inbox") {
				t.Errorf("%s imports %s", p, dep)
			}
		}
	}
}
