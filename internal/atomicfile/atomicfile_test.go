package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a new file and a replaced one hold exactly the data, with the
// mode asked for, and no temporary file is left beside them.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, tt := range []struct {
		data string
		perm os.FileMode
	}{{"first\n", 0o600}, {"second, longer\n", 0o644}, {"", 0o600}} {
		if err := Write(path, []byte(tt.data), tt.perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tt.data {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, tt.data)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != tt.perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), tt.perm)
		}
		assertOnly(t, dir, "state")
	}
}

// TestFailureKeepsTheOldFile: a write that cannot complete (the destination
// is a directory, so the rename fails; the directory does not exist, so the
// temporary file cannot be made) leaves what was there and no temporary file.
func TestFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "taken")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("x"), 0o600); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	assertOnly(t, dir, "taken")
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
	assertOnly(t, dir, "taken")
}

// TestPending: files prepared are not in place until Commit; Discard removes
// a prepared file and leaves the old content.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(b, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pa, err := Prepare(a, []byte("new a"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Prepare(b, []byte("new b"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Errorf("a is in place before Commit: %v", err)
	}
	if err := pa.Commit(); err != nil {
		t.Fatal(err)
	}
	pa.Discard() // after Commit: nothing to do
	pb.Discard()
	if got, _ := os.ReadFile(a); string(got) != "new a" {
		t.Errorf("a = %q", got)
	}
	if got, _ := os.ReadFile(b); string(got) != "old" {
		t.Errorf("b = %q after Discard, want the old content", got)
	}
	assertOnly(t, dir, "a", "b")
}

func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("directory holds %q, want %q", got, names)
	}
	for i := range got {
		if got[i] != names[i] {
			t.Fatalf("directory holds %q, want %q", got, names)
		}
	}
}

func TestWriteFunc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A writer that fails part way leaves the old content, and no
	// temporary file.
	boom := errors.New("boom")
	err := WriteFunc(path, 0o600, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteFunc = %v, want the writer's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("after a failed write: %q", b)
	}
	assertOnly(t, dir, "f")
	if err := WriteFunc(path, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("after WriteFunc: %q", b)
	}
}
