package gen

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEventPackage(t *testing.T) {
	for in, want := range map[string]string{
		"push": "events_p", "issues": "events_i", "Zebra": "events_z", "_x": "events_other", "": "events_other", "émoi": "events_other",
	} {
		if got := EventPackage(in); got != want {
			t.Errorf("EventPackage(%q) = %q, want %q", in, got, want)
		}
	}
}

// fixtureWithRecord loads the fixture with its committed record.
func fixtureWithRecord(t *testing.T) *Schema {
	t.Helper()
	s, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Packages.Types) == 0 {
		t.Fatal("the fixture has no package record")
	}
	return s
}

// TestSplitIsStable: the split follows the record, and a schema change moves
// nothing recorded, but to break an import cycle, which Moved reports.
func TestSplitIsStable(t *testing.T) {
	t.Run("the committed record is what the fixture gives", func(t *testing.T) {
		s := fixtureWithRecord(t)
		rec, err := PackagesOf(s)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(s.Packages, rec); d != "" {
			t.Errorf("the record changed (-committed +generated):\n%s", d)
		}
	})
	t.Run("a new user in another package does not move a type", func(t *testing.T) {
		s := fixtureWithRecord(t)
		// A new event, in events_z, whose payload uses Issue (events_i, used
		// by issues alone until now) and a new type only it uses.
		s.Types = append(s.Types,
			Type{Name: "ZapEvent", Kind: KindStruct, Fields: []Field{{JSON: "issue", Type: "Issue", Required: true}, {JSON: "zap", Type: "Zap"}}},
			Type{Name: "Zap", Kind: KindStruct, Fields: []Field{{JSON: "issue", Type: "Issue"}, {JSON: "by", Type: "User"}}})
		s.Events = append(s.Events, Event{Name: "zap", Type: "ZapEvent"})
		rec, err := PackagesOf(s)
		if err != nil {
			t.Fatal(err)
		}
		if m := Moved(s.Packages, rec); len(m) > 0 {
			t.Errorf("moved: %q", m)
		}
		if rec.Events["zap"] != "events_z" || rec.Types["Zap"] != "events_z" || rec.Types["Issue"] != "events_i" {
			t.Errorf("zap in %q, Zap in %q, Issue in %q", rec.Events["zap"], rec.Types["Zap"], rec.Types["Issue"])
		}
		// And it compiles: Generate gives events_z's files.
		files, err := Generate(s, DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range files {
			found = found || f.Name == "internal/events_z/types.go"
		}
		if !found {
			t.Error("no internal/events_z/types.go")
		}
	})
	t.Run("a new shared type goes with the recorded types it refers to", func(t *testing.T) {
		s := fixtureWithRecord(t)
		// Squad: used by push (events_p) and issues (events_i), and refers to
		// Team, recorded in events_i: it goes to events_i, not to common,
		// which would have to import events_i.
		s.Types = append(s.Types, Type{Name: "Squad", Kind: KindStruct, Fields: []Field{{JSON: "team", Type: "Team"}}})
		for i := range s.Types {
			switch s.Types[i].Name {
			case "PushEvent", "Issue":
				s.Types[i].Fields = append(append([]Field(nil), s.Types[i].Fields...), Field{JSON: "squad", Type: "Squad"})
			}
		}
		rec, err := PackagesOf(s)
		if err != nil {
			t.Fatal(err)
		}
		if m := Moved(s.Packages, rec); len(m) > 0 {
			t.Errorf("moved: %q", m)
		}
		if rec.Types["Squad"] != "events_i" {
			t.Errorf("Squad in %q, want events_i", rec.Types["Squad"])
		}
		if _, err := Generate(s, DefaultOptions); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a removed type and event are remembered, and return to their package", func(t *testing.T) {
		s := fixtureWithRecord(t)
		recorded := s.Packages.Types["Commit"]
		if recorded == "" || s.Packages.Events["push"] == "" {
			t.Fatal("the fixture's record has no Commit or push")
		}
		gone := *s
		gone.Events = slices.DeleteFunc(slices.Clone(s.Events), func(e Event) bool { return e.Name == "push" })
		gone.Types = slices.DeleteFunc(slices.Clone(s.Types), func(ty Type) bool { return ty.Name == "PushEvent" || ty.Name == "Commit" })
		rec, err := PackagesOf(&gone)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Types["Commit"] != recorded || rec.Events["push"] != s.Packages.Events["push"] {
			t.Errorf("after removal: Commit in %q, push in %q; want both remembered", rec.Types["Commit"], rec.Events["push"])
		}
		if d := cmp.Diff(s.Packages, rec); d != "" {
			t.Errorf("a removal changed the record (-before +after):\n%s", d)
		}
	})
	t.Run("enums live in common", func(t *testing.T) {
		s := fixtureWithRecord(t)
		if got := s.Packages.Types["IssueState"]; got != commonPkg {
			t.Errorf("IssueState (an enum used by one package) in %q, want common", got)
		}
	})
	t.Run("a recorded event keeps its package", func(t *testing.T) {
		s := fixtureWithRecord(t)
		s.Packages.Events = maps.Clone(s.Packages.Events)
		s.Packages.Events["push"] = "events_git"
		rec, err := PackagesOf(s)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Events["push"] != "events_git" || rec.Types["Commit"] != "events_p" {
			t.Errorf("push in %q, Commit in %q", rec.Events["push"], rec.Types["Commit"])
		}
	})
	t.Run("a cycle moves the types that close it to common", func(t *testing.T) {
		s := fixtureWithRecord(t)
		// User (common) starts to refer to Team (events_i): common may import
		// nothing generated, so Team moves, with what it refers to.
		for i := range s.Types {
			if s.Types[i].Name == "User" {
				s.Types[i].Fields = append(append([]Field(nil), s.Types[i].Fields...), Field{JSON: "team", Type: "Team"})
			}
		}
		rec, err := PackagesOf(s)
		if err != nil {
			t.Fatal(err)
		}
		moved := Moved(s.Packages, rec)
		if len(moved) == 0 || moved[0] != "type Team: events_i -> common" {
			t.Errorf("moved: %q", moved)
		}
		if _, err := Generate(s, DefaultOptions); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFindCycle(t *testing.T) {
	e := func(pairs ...string) map[string]map[string][]string {
		m := map[string]map[string][]string{}
		for i := 0; i < len(pairs); i += 2 {
			if m[pairs[i]] == nil {
				m[pairs[i]] = map[string][]string{}
			}
			m[pairs[i]][pairs[i+1]] = []string{"T"}
		}
		return m
	}
	for _, tc := range []struct {
		edges map[string]map[string][]string
		want  []string
	}{
		{e("a", "common", "b", "common", "b", "a"), nil},
		{e("a", "b", "b", "a"), []string{"a", "b"}},
		{e("a", "b", "b", "c", "c", "a", "c", "common"), []string{"a", "b", "c"}},
	} {
		if got := findCycle(tc.edges); !cmp.Equal(got, tc.want) {
			t.Errorf("findCycle(%v) = %v, want %v", tc.edges, got, tc.want)
		}
	}
}
