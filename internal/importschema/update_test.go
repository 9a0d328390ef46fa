package importschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// The committed copies of two published versions of the main spec, oldest first:
// the real update the lock and the report were built for.
var updateSpecs = []string{
	"testdata/specs/api.github.com-12.0.3.json.gz",
	"testdata/specs/api.github.com-12.1.0.json.gz",
}

// TestRealUpdate is the maintainer's flow on the real published specs, offline:
// in a copy of the module with no schema, no lock and no partition record, import
// the older spec (as make schema does), generate package payloads (as make
// generate does), write a program that uses every exported type, field (with its
// type), method, constant, function and variable of it; then import the newer
// spec, generate again, and check that the program still compiles, that the
// report found no breaking change and named every new event with the counts of
// what it added, and that no type present in both versions changed package.
//
// It takes two generations and compiles (about a minute on two cores); -short
// skips it, and `make test` runs it.
func TestRealUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("the real update takes two generations and compiles; make test runs it")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	start := time.Now()
	root := copyModule(t, "../..")
	schemaDir := filepath.Join(root, "schema")
	for _, f := range []string{genmodel.EventsFile, genmodel.TypesFile, LockFile, "packages.yaml"} {
		if err := os.Remove(filepath.Join(schemaDir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(schemaDir, "source")); err != nil {
		t.Fatal(err)
	}
	changelog := filepath.Join(root, "CHANGELOG.md")
	os.Remove(changelog)

	var (
		schemas  []*genmodel.Schema
		reports  []*Report
		stderrs  []string
		uses     []*apiUse
		versions []string
	)
	for i, specPath := range updateSpecs {
		version := installSpec(t, specPath, filepath.Join(schemaDir, "source"))
		versions = append(versions, version)
		repPath := filepath.Join(t.TempDir(), "report.json")
		var stderr bytes.Buffer
		code := Run([]string{"-spec", filepath.Join(schemaDir, "source", mainVariant+".json.gz"),
			"-overrides", filepath.Join(schemaDir, "overrides.yaml"), "-out", schemaDir,
			"-changelog", changelog, "-report-json", repPath}, &stderr)
		if code != 0 {
			t.Fatalf("import %s: exit %d\n%s", version, code, stderr.String())
		}
		stderrs = append(stderrs, stderr.String())
		rep := &Report{}
		readJSON(t, repPath, rep)
		reports = append(reports, rep)
		s, err := genmodel.Load(schemaDir)
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		schemas = append(schemas, s)

		// make schema's second step, the record of the generated packages,
		// then make generate's.
		goCmd(t, root, "run", "./cmd/genpayloads", "-schema", "schema", "-out", "payloads", "-write-packages")
		goCmd(t, root, "generate", "./payloads/...")
		pkg, err := loadPackage(root, "forgehooks.dev/forgehooks/payloads")
		if err != nil {
			t.Fatal(err)
		}
		u := usesProgram(pkg)
		uses = append(uses, u)
		if i == 0 {
			dir := filepath.Join(root, "cmd", "apiuse")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(u.program), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: the program uses %d types, %d fields, %d methods, %d constants, %d functions, %d variables (%d generic names left out: %s)",
				version, u.types, u.fields, u.methods, u.consts, u.funcs, u.vars, len(u.skipped), strings.Join(u.skipped, ", "))
			if u.types == 0 || u.fields == 0 || u.methods == 0 || u.consts == 0 {
				t.Fatalf("the program uses too little of payloads: %+v", u)
			}
		}
		// After the first import the program compiles by construction; after the
		// second it must still.
		if out, err := goOut(root, "build", "-o", os.DevNull, "./cmd/apiuse"); err != nil {
			t.Fatalf("after %s, the program using every name of %s's payloads does not compile: %v\n%s", version, versions[0], err, firstLines(out, 40))
		}
	}
	t.Logf("%s → %s: %s", versions[0], versions[1], strings.ReplaceAll(reports[1].Summary(), "\n", " "))

	// The report of the update: derived from the two schemas, not typed in.
	old, new := schemas[0], schemas[1]
	rep := reports[1]
	if rep.From != versions[0] || rep.To != versions[1] {
		t.Errorf("report from %q to %q, want %s to %s", rep.From, rep.To, versions[0], versions[1])
	}
	if len(rep.Breaking) > 0 {
		t.Errorf("an additive update reports %d breaking changes: %+v", len(rep.Breaking), rep.Breaking)
	}
	oldEvents := map[string]bool{}
	for _, e := range old.Events {
		oldEvents[e.Name] = true
	}
	wantNew := map[string]genmodel.Event{}
	for _, e := range new.Events {
		if !oldEvents[e.Name] {
			wantNew[e.Name] = e
		}
	}
	if _, ok := wantNew["issue_dependencies"]; !ok {
		t.Fatalf("the fixture no longer adds issue_dependencies: new events %v", sortedKeys(wantNew))
	}
	got := map[string]NewEvent{}
	for _, e := range rep.NewEvents {
		got[e.Name] = e
	}
	oldTypes := typeMap(old)
	for name, e := range wantNew {
		ne, ok := got[name]
		if !ok {
			t.Errorf("the report does not name the new event %s", name)
			continue
		}
		newTypes, members := 0, 0
		for _, tn := range reachable(new, payloadTypes(e)) {
			if _, had := oldTypes[tn]; !had {
				newTypes++
				members += len(typeMap(new)[tn].Fields)
			}
		}
		if len(ne.Actions) != len(e.Actions) || ne.Types != newTypes || ne.Members != members || newTypes == 0 {
			t.Errorf("new event %s: report says %d actions, %d types, %d members; the schema has %d, %d, %d",
				name, len(ne.Actions), ne.Types, ne.Members, len(e.Actions), newTypes, members)
		}
		line := fmt.Sprintf("New event %s: %d actions", name, len(e.Actions))
		if !strings.Contains(stderrs[1], line) {
			t.Errorf("make schema's output lacks %q:\n%s", line, stderrs[1])
		}
	}
	cl, err := os.ReadFile(changelog)
	if err != nil || !strings.Contains(string(cl), "`issue_dependencies`") || !strings.Contains(string(cl), versions[0]+" → "+versions[1]) {
		t.Errorf("CHANGELOG.md lacks the update's section (%v):\n%s", err, firstLines(string(cl), 20))
	}

	// No type present in both versions changed package.
	var moved []string
	for name, home := range uses[0].home {
		if h, ok := uses[1].home[name]; ok && h != home {
			moved = append(moved, fmt.Sprintf("%s (%s → %s)", name, home, h))
		}
	}
	sort.Strings(moved)
	t.Logf("the real update took %v", time.Since(start).Round(time.Second))
	if len(moved) > 0 {
		if _, err := os.Stat(filepath.Join(schemaDir, "packages.yaml")); os.IsNotExist(err) {
			t.Skipf("%d of %d types changed package (%s, …): the stable partition (the generator's record schema/packages.yaml, issue 22's gen side) has not landed on this branch",
				len(moved), len(uses[0].home), moved[0])
		}
		t.Errorf("%d types changed package although the partition is recorded: %s", len(moved), strings.Join(moved, "; "))
	}
}

// installSpec puts a committed spec copy where make schema would, with the record
// of it, and returns its version (the spec's info.version).
func installSpec(t *testing.T, specPath, sourceDir string) string {
	t.Helper()
	gz, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	data, err := readSpec(specPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	version := specVersionOf(specPath, data)
	if err := os.MkdirAll(sourceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := &record{Package: specPackage, Version: version, File: specFile, SHA256: sha256Hex(data), TarballSHA256: strings.Repeat("0", 64)}
	recData, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := commit([]pendingFile{{filepath.Join(sourceDir, mainVariant+".json.gz"), gz}, {filepath.Join(sourceDir, recordName), recData}}); err != nil {
		t.Fatal(err)
	}
	return version
}

// copyModule copies the module at src (without .git and nested modules, which a
// build of payloads does not need) into a temporary directory.
func copyModule(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	src, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel != "." {
				if d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" && strings.HasPrefix(rel, "internal/importschema") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := goOut(dir, args...); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, firstLines(out, 40))
	}
}

func goOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}
