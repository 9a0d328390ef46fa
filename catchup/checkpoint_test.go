package catchup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
)

func TestStateFile(t *testing.T) {
	dir := t.TempDir()
	f := &catchup.StateFile{Path: filepath.Join(dir, "state.json")}
	ctx := t.Context()
	if s, err := f.Load(ctx, "app/hook"); err != nil || !s.Through.IsZero() || s.Requested != nil {
		t.Fatalf("missing file: %+v, %v; want the zero State", s, err)
	}
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	a := catchup.State{Through: at, Requested: map[string]time.Time{"g1": at}}
	b := catchup.State{Through: at.Add(time.Hour)}
	if err := f.Save(ctx, "app/hook", a); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(ctx, "repos/o/r/hooks/1", b); err != nil {
		t.Fatal(err)
	}
	// another StateFile on the same path, as the next process
	g := &catchup.StateFile{Path: f.Path}
	got, err := g.Load(ctx, "app/hook")
	if err != nil || !got.Through.Equal(at) || !got.Requested["g1"].Equal(at) || len(got.Requested) != 1 {
		t.Errorf("app/hook: %+v, %v", got, err)
	}
	if got, _ := g.Load(ctx, "repos/o/r/hooks/1"); !got.Through.Equal(b.Through) {
		t.Errorf("repo hook: %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want the state file alone (no temporary left)", len(entries))
	}

	for name, content := range map[string]string{
		"corrupt":       `{"version":1,"hooks":{`,
		"other version": `{"version":2,"hooks":{}}`,
	} {
		p := filepath.Join(dir, name+".json")
		os.WriteFile(p, []byte(content), 0o600)
		bad := &catchup.StateFile{Path: p}
		if _, err := bad.Load(ctx, "app/hook"); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want one naming the file", name, err)
		}
		if err := bad.Save(ctx, "app/hook", a); err == nil {
			t.Errorf("%s: Save overwrote a file it cannot read", name)
		}
		if after, _ := os.ReadFile(p); string(after) != content {
			t.Errorf("%s: file changed", name)
		}
	}
	if err := (&catchup.StateFile{Path: filepath.Join(dir, "no", "such", "dir.json")}).Save(ctx, "k", a); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
}

func TestMemoryCheckpoints(t *testing.T) {
	var m catchup.MemoryCheckpoints
	s := catchup.State{Requested: map[string]time.Time{"g": {}}}
	if err := m.Save(t.Context(), "k", s); err != nil {
		t.Fatal(err)
	}
	s.Requested["h"] = time.Time{} // the caller's map is not the stored one
	got, _ := m.Load(t.Context(), "k")
	if len(got.Requested) != 1 {
		t.Errorf("stored state changed with the caller's map: %v", got.Requested)
	}
}
