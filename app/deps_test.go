package app_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "forgehooks.dev/forgehooks"

// TestDependencies: package app imports only the standard library and this
// module's own stdlib-only packages (no NATS, nothing third-party), and not
// the generated payload types, which a raw-handlers program need not compile
// (payloads/names, the schema's names without any type, is allowed).
func TestDependencies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	args := []string{"list", "-e", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Path}}{{end}}{{with .Error}} ERROR:{{.Err}}{{end}}", module + "/app"}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var own []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, " ERROR:") {
			t.Fatalf("go list: %s", line)
		}
		f := append(strings.Fields(line), "", "")
		path, std, mod := f[0], f[1], f[2]
		switch {
		case std == "true":
		case mod != module:
			t.Errorf("app depends on %s (module %q): runtime packages are standard-library only", path, mod)
		case path == module+"/payloads/names":
			// The schema's names and variants, which the emitter checks
			// registrations against: stdlib only, no payload type.
			own = append(own, strings.TrimPrefix(path, module+"/"))
		case path == module+"/payloads" || strings.HasPrefix(path, module+"/payloads/"):
			t.Errorf("app depends on %s: it must not compile the generated payloads", path)
		default:
			own = append(own, strings.TrimPrefix(path, module+"/"))
		}
	}
	if len(own) < 2 {
		t.Fatalf("go list found only %v of this module: not the package meant", own)
	}
	t.Logf("this module's packages app depends on: %v", own)
}
