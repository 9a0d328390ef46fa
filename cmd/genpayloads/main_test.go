package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"forgehooks.dev/forgehooks/internal/gen"
)

const fixture = "../../internal/gen/testdata/fixture"

func TestRunWritesAndPrunes(t *testing.T) {
	out := t.TempDir()
	stale := filepath.Join(out, "old_events.go")
	handWritten := filepath.Join(out, "timestamp.go")
	if err := os.WriteFile(stale, []byte("// "+gen.Header+"\n\npackage payloads\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(handWritten, []byte("package payloads\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"codec.go", "enums.go", "events.go", "names.go", "register.go", "types.go", "timestamp.go"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale generated file was kept: %v", err)
	}
	// A second run changes nothing (not even modification times).
	before, _ := os.Stat(filepath.Join(out, "codec.go"))
	if err := run(fixture, out, gen.DefaultOptions); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(out, "codec.go"))
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
		b, err := os.ReadFile(filepath.Join(fixture, name))
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
