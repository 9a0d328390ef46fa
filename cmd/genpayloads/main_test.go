package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/gen"
)

const fixtureDir = "../../gen/testdata/fixture"

// copyFixture copies the fixture schema to a new directory, which run may
// write the package record to.
func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunWritesAndPrunes(t *testing.T) {
	fixture := copyFixture(t)
	out := t.TempDir()
	stale := filepath.Join(out, "old_events.go")
	staleDir := filepath.Join(out, "internal", "group9")
	handWritten := filepath.Join(out, "timestamp.go")
	if err := os.MkdirAll(staleDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{stale, filepath.Join(staleDir, "types.go")} {
		if err := os.WriteFile(path, []byte("// "+gen.Header+"\n\npackage payloads\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(handWritten, []byte("package payloads\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aliases.go", "names.go", "register.go", "timestamp.go",
		"internal/common/codec.go", "internal/common/types.go", "internal/events_i/events.go", "internal/events_i/parse.go"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale generated file was kept: %v", err)
	}
	if _, err := os.Stat(staleDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale generated package was kept: %v", err)
	}
	// A second run changes nothing (not even modification times).
	before, _ := os.Stat(filepath.Join(out, "internal", "common", "codec.go"))
	if err := run(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(out, "internal", "common", "codec.go"))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("an unchanged file was rewritten")
	}
}

func TestRunErrors(t *testing.T) {
	if err := run(t.TempDir(), t.TempDir(), gen.DefaultOptions); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run on an empty schema directory = %v, want a not-exist error", err)
	}
	bad := t.TempDir()
	for _, name := range []string{"events.yaml", "types.yaml"} {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "types.yaml" {
			b = append(b, "  - name: Zzz\n    kind: struct\n    fields:\n      - json: x\n        type: Missing\n"...)
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(bad, t.TempDir(), gen.DefaultOptions); !errors.Is(err, gen.ErrInvalidSchema) {
		t.Errorf("run on a schema with an undefined type = %v, want ErrInvalidSchema", err)
	}
}

// TestPackagesRecordIsAnExplicitStep: generation never writes the record
// of the generated packages; it fails while the record lacks what the schema
// has, and -write-packages (record) writes it, generating nothing.
func TestPackagesRecordIsAnExplicitStep(t *testing.T) {
	fixture := copyFixture(t)
	recPath := filepath.Join(fixture, gen.PackagesFile)
	want, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(recPath); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := run(fixture, out, gen.DefaultOptions); err == nil || !strings.Contains(err.Error(), "-write-packages") {
		t.Fatalf("generation without a record: %v, want an error naming -write-packages", err)
	}
	if _, err := os.Stat(recPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("generation wrote the record: %v", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a failed generation wrote %d files", len(entries))
	}
	if err := record(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("-write-packages generated %d files", len(entries))
	}
	got, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the record written differs from the fixture's:\n%s\nwant:\n%s", got, want)
	}
	if err := run(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatalf("generation with the record: %v", err)
	}
}
