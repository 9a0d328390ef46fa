package catchup_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
)

func TestStateFile(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// Options that cannot work are refused before any request; plain http to
// another machine is warned of.
func TestCatchupOptions(t *testing.T) {
	t.Parallel()
	tok := catchup.Token("t")
	tests := []struct {
		name string
		o    catchup.Options
		err  string
	}{
		{"no hook", catchup.Options{Credentials: tok}, "no hook: use AppHook, RepoHook or OrgHook"},
		{"no credentials", catchup.Options{Hook: catchup.AppHook()}, "no credentials"},
		{"repo without name", catchup.Options{Hook: catchup.RepoHook("o", "", 1), Credentials: tok}, "owner and repository are required"},
		{"hook id", catchup.Options{Hook: catchup.OrgHook("o", 0), Credentials: tok}, "organization hook o #0: hook id must be positive"},
		{"bad URL", catchup.Options{Hook: catchup.AppHook(), Credentials: tok, APIURL: "ftp://x"}, `API URL "ftp://x"`},
		{"empty token", catchup.Options{Hook: catchup.OrgHook("o", 1), Credentials: catchup.Token(""), APIURL: "http://127.0.0.1:1"}, "GET /orgs/o/hooks/1/deliveries: credentials: empty token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catchup.Run(t.Context(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
	var logs strings.Builder
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no request leaves
	_, err := catchup.Run(ctx, catchup.Options{Hook: catchup.AppHook(), Credentials: tok, APIURL: "http://198.51.100.7/api/v3", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !errors.Is(err, context.Canceled) || !strings.Contains(logs.String(), "credentials travel unencrypted") {
		t.Errorf("err %v, logs %q", err, logs.String())
	}
}
