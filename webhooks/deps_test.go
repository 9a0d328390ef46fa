package webhooks_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "forgehooks.dev/forgehooks"

// goListDeps returns every package pkgs depend on (themselves included), as
// "import/path standard module" lines of go list -deps.
func goListDeps(t *testing.T, pkgs ...string) [][3]string {
	t.Helper()
	args := append([]string{"list", "-e", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Path}}{{end}}{{with .Error}} ERROR:{{.Err}}{{end}}"}, pkgs...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var deps [][3]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, " ERROR:") {
			t.Fatalf("go list: %s", line)
		}
		f := strings.Fields(line)
		for len(f) < 3 {
			f = append(f, "")
		}
		deps = append(deps, [3]string{f[0], f[1], f[2]})
	}
	return deps
}

// TestDependencies: the runtime packages import only the standard library
// and this module's own stdlib-only packages (no NATS, nothing third-party),
// and a program with raw handlers only compiles no file of package payloads,
// whose generated code is most of the module's build time.
func TestDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	runtime := []string{"signing", "emitter", "payloads", "payloads/names", "webhooks"}
	if out, err := exec.Command("go", "list", module+"/webhookstest").CombinedOutput(); err == nil {
		runtime = append(runtime, "webhookstest")
	} else if !strings.Contains(string(out), "cannot find") && !strings.Contains(string(out), "no required module") && !strings.Contains(string(out), "is not in std") {
		t.Logf("webhookstest not listed: %s", out)
	}
	for _, pkg := range runtime {
		t.Run(pkg, func(t *testing.T) {
			for _, d := range goListDeps(t, module+"/"+pkg) {
				path, std, mod := d[0], d[1], d[2]
				if std == "true" {
					continue
				}
				if mod != module {
					t.Errorf("%s depends on %s (module %q): runtime packages are standard-library only", pkg, path, mod)
				}
			}
		})
	}
	t.Run("names holds no typed payload", func(t *testing.T) {
		for _, d := range goListDeps(t, module+"/payloads/names") {
			if d[1] != "true" && d[0] != module+"/payloads/names" {
				t.Errorf("payloads/names depends on %s: it must stay standard-library only", d[0])
			}
		}
	})
	t.Run("raw-only program", func(t *testing.T) {
		deps := goListDeps(t, "./testdata/rawonly")
		var own []string
		for _, d := range deps {
			// payloads/names (the names and variants, stdlib only) is allowed:
			// it holds no typed payload.
			if d[0] != module+"/payloads/names" && (d[0] == module+"/payloads" || strings.HasPrefix(d[0], module+"/payloads/")) {
				t.Errorf("a program with raw handlers only depends on %s", d[0])
			}
			if d[2] == module {
				own = append(own, strings.TrimPrefix(d[0], module+"/"))
			}
		}
		if len(own) < 3 {
			t.Fatalf("go list found only %v of this module: not the program meant", own)
		}
		t.Logf("this module's packages in a raw-only program: %v", own)
	})
}

// TestNoPlatformLibraries: this module requires no function platform's
// library, and none of its packages, tests included, compiles one: the
// platform adapters are modules of their own (lambda/), so that a program
// that serves over net/http does not download them. The adapter's own
// go.mod must require its library, or the list checked here has gone stale.
func TestNoPlatformLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	platform := []string{"github.com/aws/aws-lambda-go", "github.com/GoogleCloudPlatform/functions-framework-go"}
	requires := func(gomod string) map[string]bool {
		out, err := exec.Command("go", "mod", "edit", "-json", gomod).CombinedOutput()
		if err != nil {
			t.Fatalf("go mod edit -json %s: %v\n%s", gomod, err, out)
		}
		var mf struct {
			Module  struct{ Path string }
			Require []struct{ Path string }
		}
		if err := json.Unmarshal(out, &mf); err != nil {
			t.Fatalf("%s: %v", gomod, err)
		}
		req := map[string]bool{"module " + mf.Module.Path: true}
		for _, r := range mf.Require {
			req[r.Path] = true
		}
		return req
	}
	root := requires("../go.mod")
	if !root["module "+module] {
		t.Fatalf("../go.mod is not module %s: %v", module, root)
	}
	for _, p := range platform {
		if root[p] {
			t.Errorf("go.mod requires %s: platform libraries belong in the adapter's module", p)
		}
	}
	if adapter := requires("../lambda/go.mod"); !adapter["module "+module+"/lambda"] || !adapter[platform[0]] {
		t.Errorf("lambda/go.mod is not module %s/lambda requiring %s: %v", module, platform[0], adapter)
	}
	out, err := exec.Command("go", "list", "-e", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}{{end}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test %s/...: %v\n%s", module, err, out)
	}
	for _, m := range strings.Fields(string(out)) {
		for _, p := range platform {
			if m == p {
				t.Errorf("a package of %s, or its test, compiles %s", module, p)
			}
		}
	}
}
