package gen

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackagePinsTheRuntime: each package Generate writes, but names
// (which must not import the runtime), references the runtime's version
// constant once.
func TestEveryPackagePinsTheRuntime(t *testing.T) {
	s, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("const _ int = codec.IsVersion%d\n", runtimeVersion)
	for _, opts := range []Options{DefaultOptions, {PackagePath: "example.com/fx/fxpayloads", PackageName: "fxpayloads", Standalone: true}} {
		files, err := Generate(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		refs := map[string]int{}
		for _, f := range files {
			dir := filepath.Dir(f.Name)
			refs[dir] += strings.Count(string(f.Content), ref)
		}
		if len(refs) < 3 {
			t.Fatalf("only the packages %v", refs)
		}
		for dir, n := range refs {
			want := 1
			if dir == "names" {
				want = 0
			}
			if n != want {
				t.Errorf("%s: package %s references the runtime's version %d times, want %d", opts.PackagePath, dir, n, want)
			}
		}
	}
}

// TestRuntimeVersionMismatch builds a package generated from the fixture in
// a scratch module: it builds against this runtime; against a runtime whose
// version went up (an overlay of payloads/codec/version.go) it fails with
// the compiler quoting "regenerate this package"; and with its reference
// changed to a version this runtime does not serve yet, it fails too.
func TestRuntimeVersionMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/fx\n\ngo 1.26\n\nrequire forgehooks.dev/forgehooks v0.0.0\n\nreplace forgehooks.dev/forgehooks => %s\n", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(s, Options{PackagePath: "example.com/fx/fxpayloads", PackageName: "fxpayloads", Standalone: true})
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "fxpayloads")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(pkg, files); err != nil {
		t.Fatal(err)
	}
	// overlay writes an overlay for go build -overlay: each file's path
	// with the content it builds with instead.
	// The files are kept out of the module, whose ./... would take them in.
	overlay := func(replace map[string]string) string {
		t.Helper()
		alts := t.TempDir()
		o := struct{ Replace map[string]string }{map[string]string{}}
		for path, content := range replace {
			alt := filepath.Join(alts, fmt.Sprint(len(o.Replace), ".go"))
			if err := os.WriteFile(alt, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			o.Replace[path] = alt
		}
		b, _ := json.Marshal(o)
		path := filepath.Join(alts, "overlay.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	build := func(overlay string) (string, error) {
		args := []string{"build"}
		if overlay != "" {
			args = append(args, "-overlay", overlay)
		}
		cmd := exec.Command("go", append(args, "./...")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := build(""); err != nil {
		t.Fatalf("the generated package does not build against this runtime: %v\n%s", err, out)
	}

	// The runtime one version on: this version's constant retired.
	versionFile := filepath.Join(root, "payloads", "codec", "version.go")
	b, err := os.ReadFile(versionFile)
	if err != nil {
		t.Fatal(err)
	}
	cur := fmt.Sprintf("const IsVersion%d = %d\n", runtimeVersion, runtimeVersion)
	if !strings.Contains(string(b), cur) {
		t.Fatalf("%s does not declare %q: gen's runtimeVersion and the runtime's differ", versionFile, strings.TrimSpace(cur))
	}
	next := strings.Replace(string(b), cur, fmt.Sprintf("const IsVersion%d = \"regenerate this package: it was generated for an older runtime\"\n\nconst IsVersion%d = %d\n", runtimeVersion, runtimeVersion+1, runtimeVersion+1), 1)
	out, err := build(overlay(map[string]string{versionFile: next}))
	want := fmt.Sprintf(`cannot use codec.IsVersion%d (untyped string constant "regenerate this package`, runtimeVersion)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("against a newer runtime: %v, want an error with %q:\n%s", err, want, out)
	}
	t.Logf("against a newer runtime:\n%s", out)

	// The package generated for a version this runtime does not serve yet.
	replace := map[string]string{}
	ref := fmt.Sprintf("codec.IsVersion%d\n", runtimeVersion)
	for _, f := range files {
		if strings.Contains(string(f.Content), ref) {
			replace[filepath.Join(pkg, f.Name)] = strings.Replace(string(f.Content), ref, fmt.Sprintf("codec.IsVersion%d\n", runtimeVersion+1), 1)
		}
	}
	out, err = build(overlay(replace))
	want = fmt.Sprintf("undefined: codec.IsVersion%d", runtimeVersion+1)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("a package for a newer runtime: %v, want an error with %q:\n%s", err, want, out)
	}
}
