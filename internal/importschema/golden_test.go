package importschema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

const fixtureDir = "testdata/fixture"

// TestGolden imports the fixture spec with its overrides through the command and
// compares what it writes (both YAML files and the warnings) with testdata.
func TestGolden(t *testing.T) {
	out := t.TempDir()
	var stderr bytes.Buffer
	args := []string{
		"-spec", filepath.Join(fixtureDir, "spec.json"),
		"-record", filepath.Join(fixtureDir, "source.yaml"),
		"-overrides", filepath.Join(fixtureDir, "overrides.yaml"),
		"-out", out, "-q",
	}
	if code := Run(args, &stderr); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
	got := map[string]string{"stderr.txt": stderr.String()}
	for _, f := range []string{genmodel.EventsFile, genmodel.TypesFile, LockFile} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		got[f] = string(b)
	}
	for name, text := range got {
		want := filepath.Join(fixtureDir, "want", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(want, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(b), text); d != "" {
			t.Errorf("%s differs from %s (-want +got; go test -update rewrites):\n%s", name, want, d)
		}
	}
}

// TestInMemoryCheckIsWhatIsWritten: the schema the importer checks in
// memory (the YAML it is about to write, parsed by genmodel.Parse) is the
// schema it built, and the schema the generator then loads from the files
// it wrote.
func TestInMemoryCheckIsWhatIsWritten(t *testing.T) {
	var built, checked *genmodel.Schema
	onChecked = func(b, c *genmodel.Schema) { built, checked = b, c }
	defer func() { onChecked = nil }()
	out := t.TempDir()
	var stderr bytes.Buffer
	args := []string{
		"-spec", filepath.Join(fixtureDir, "spec.json"),
		"-record", filepath.Join(fixtureDir, "source.yaml"),
		"-overrides", filepath.Join(fixtureDir, "overrides.yaml"),
		"-out", out, "-q",
	}
	if code := Run(args, &stderr); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
	if checked == nil {
		t.Fatal("the import checked nothing in memory")
	}
	loaded, err := genmodel.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(checked.Types) == 0 || len(checked.Events) == 0 {
		t.Fatalf("checked %d events and %d types", len(checked.Events), len(checked.Types))
	}
	if d := cmp.Diff(built, checked); d != "" {
		t.Errorf("the schema checked in memory differs from the one built (-built +checked):\n%s", d)
	}
	if d := cmp.Diff(checked, loaded); d != "" {
		t.Errorf("the schema loaded from the files written differs from the one checked in memory (-checked +loaded):\n%s", d)
	}
}

// TestGoldenStable imports the fixture twice: the output must not change, and a
// second run must leave the files alone.
func TestGoldenStable(t *testing.T) {
	out := t.TempDir()
	args := []string{"-spec", filepath.Join(fixtureDir, "spec.json"), "-record", "none",
		"-overrides", filepath.Join(fixtureDir, "overrides.yaml"), "-out", out, "-q"}
	var first [2][]byte
	for i := range 2 {
		var stderr bytes.Buffer
		if code := Run(args, &stderr); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, stderr.String())
		}
		b, err := os.ReadFile(filepath.Join(out, genmodel.TypesFile))
		if err != nil {
			t.Fatal(err)
		}
		first[i] = b
	}
	if !bytes.Equal(first[0], first[1]) {
		t.Error("two imports of one spec differ")
	}
}

func TestRunErrors(t *testing.T) {
	spec := filepath.Join(fixtureDir, "spec.json")
	badRecord := filepath.Join(t.TempDir(), "source.yaml")
	if err := os.WriteFile(badRecord, []byte("package: p\nversion: v\nsha256: "+strings.Repeat("0", 64)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badOverrides := filepath.Join(t.TempDir(), "overrides.yaml")
	if err := os.WriteFile(badOverrides, []byte("names:\n  - name: a.b\n    like: a.c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(t.TempDir(), "spec.json") // no record beside it
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"extra argument", []string{"x"}, 2, "unexpected arguments"},
		{"missing spec", []string{"-spec", "testdata/none.json", "-record", "none"}, 1, "no such file"},
		{"missing record", []string{"-spec", lone}, 1, "record: open"},
		{"checksum mismatch", []string{"-spec", spec, "-record", badRecord}, 1, "checksum mismatch"},
		{"override without reason", []string{"-spec", spec, "-record", "none", "-overrides", badOverrides}, 1, "needs a reason"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append(tc.args, "-out", t.TempDir())
			if code := Run(args, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, stderr.String())
			}
		})
	}
}

// TestCommittedSchemaIsFresh re-imports the committed spec with the committed
// overrides and a copy of the committed lock, and compares with the committed
// YAML: schema/ must be what the importer makes of schema/source, and the lock
// must already hold every name and member (an import changes it only when the
// spec does).
func TestCommittedSchemaIsFresh(t *testing.T) {
	out := t.TempDir()
	lockData, err := os.ReadFile(filepath.Join("../../schema", LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, LockFile), lockData, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	args := []string{"-spec", "../../schema/source/api.github.com.json.gz",
		"-overrides", "../../schema/overrides.yaml", "-out", out, "-q"}
	if code := Run(args, &stderr); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("the committed overrides give warnings:\n%s", stderr.String())
	}
	for _, f := range []string{genmodel.EventsFile, genmodel.TypesFile, LockFile} {
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("../../schema", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schema/%s is stale: run go run ./cmd/importschema", f)
		}
	}
}

// TestCheckMode: -check reports 0 on what the import wrote, and names a file
// that differs, writing nothing.
func TestCheckMode(t *testing.T) {
	out := t.TempDir()
	args := []string{
		"-spec", filepath.Join(fixtureDir, "spec.json"),
		"-record", filepath.Join(fixtureDir, "source.yaml"),
		"-overrides", filepath.Join(fixtureDir, "overrides.yaml"),
		"-out", out, "-q",
	}
	var stderr bytes.Buffer
	if code := Run(args, &stderr); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}
	if code := Run(append(args, "-check"), &stderr); code != 0 {
		t.Fatalf("-check on what was written: exit %d\n%s", code, stderr.String())
	}
	types := filepath.Join(out, genmodel.TypesFile)
	if err := os.WriteFile(types, []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := Run(append(args, "-check"), &stderr); code != 1 || !strings.Contains(stderr.String(), types) {
		t.Errorf("-check on an edited %s: exit %d\n%s", genmodel.TypesFile, code, stderr.String())
	}
	if b, _ := os.ReadFile(types); string(b) != "# edited\n" {
		t.Error("-check wrote the file")
	}
}
