package importschema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// permsSpec is one webhook whose "perms" object has members that share one enum,
// and members "opt" and "req": the shapes of the two renames and the pointer flip
// of the real 12.0.3 → 12.1.0 update, in small.
func permsSpec(members []string, optRequired, reqRequired bool) []byte {
	var props []string
	for _, m := range members {
		props = append(props, `"`+m+`":{"type":"string","enum":["read","write"]}`)
	}
	var req []string
	if optRequired {
		req = append(req, `"opt"`)
	}
	if reqRequired {
		req = append(req, `"req"`)
	}
	body := `{"type":"object","required":["action"` + strings.Join(append([]string{""}, req...), ",") + `],"properties":{` +
		`"action":{"type":"string","enum":["made"]},` +
		`"perms":{"type":"object","properties":{` + strings.Join(props, ",") + `}},` +
		`"opt":{"type":"object","properties":{"a":{"type":"string"}}},` +
		`"req":{"type":"object","properties":{"b":{"type":"string"}}}}}`
	return testSpec([]hookSpec{{"thing-made", "thing", "thing/made", body}}, nil)
}

func enumName(t *testing.T, s *genmodel.Schema) string {
	t.Helper()
	for _, ty := range s.Types {
		if ty.Kind == genmodel.KindEnum {
			return ty.Name
		}
	}
	t.Fatalf("no enum in %v", typeNames(s))
	return ""
}

// TestLockKeepsNamesAndPointers: an upstream addition renames nothing and turns no
// pointer into a value once the lock knows the names; without the lock it does
// (so the test can fail); a value that becomes a pointer is reported as breaking.
func TestLockKeepsNamesAndPointers(t *testing.T) {
	quiet := func(string, ...any) {}
	v1 := permsSpec([]string{"members", "pages"}, false, true)
	v2 := permsSpec([]string{"actions", "members", "pages"}, true, false) // a member earlier in order; opt now required, req optional

	r1, err := importSpec(v1, &record{Version: "1"}, &overrides{}, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	unlocked, err := importSpec(v2, &record{Version: "2"}, &overrides{}, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := importSpec(v2, &record{Version: "2"}, &overrides{}, r1.lock, quiet)
	if err != nil {
		t.Fatal(err)
	}
	name1, name2, nameUnlocked := enumName(t, r1.schema), enumName(t, r2.schema), enumName(t, unlocked.schema)
	if name1 == nameUnlocked {
		t.Fatalf("the rules alone keep %s: this test no longer shows what the lock is for", name1)
	}
	if name2 != name1 {
		t.Errorf("with the lock, the shared enum is %s, was %s", name2, name1)
	}

	payload := func(s *genmodel.Schema) *genmodel.Type { return typeOf(s, "ThingMadeEvent") }
	if f := fieldOf(payload(r2.schema), "opt"); f == nil || !f.Required || !f.Pointer {
		t.Errorf("opt, once a pointer, now required: %+v, want Pointer kept", f)
	}
	if f := fieldOf(payload(unlocked.schema), "opt"); f == nil || f.Pointer {
		t.Errorf("without a lock nothing is pinned: %+v", f)
	}
	if len(r2.pointerBreaks) != 1 || r2.pointerBreaks[0] != "ThingMadeEvent.req" {
		t.Errorf("pointer breaks %v, want ThingMadeEvent.req", r2.pointerBreaks)
	}
	rep := compare(r1.schema, r2.schema)
	if rep.Bump != "major" || len(rep.Breaking) != 1 || rep.Breaking[0].Name != "ThingMadeEvent.req" {
		t.Errorf("report: bump %s, breaking %+v; want major for ThingMadeEvent.req only", rep.Bump, rep.Breaking)
	}

	// The lock only grows: every entry of r1's is in r2's, unchanged but for new
	// members; the new member's enum reuses the locked type.
	for _, old := range r1.lock.Types {
		nw := r2.lock.byName[old.Name]
		if nw == nil || nw.Site != old.Site || nw.Kind != old.Kind || nw.Since != old.Since {
			t.Errorf("lock entry %+v became %+v", old, nw)
			continue
		}
		for _, p := range old.Pointers {
			if !set(nw.Pointers)[p] {
				t.Errorf("%s: pointer %s dropped", old.Name, p)
			}
		}
	}
}

// TestLockFile: the lock survives a write and a read, and a missing file is an
// empty lock.
func TestLockFile(t *testing.T) {
	res, err := importSpec(permsSpec([]string{"members"}, false, true), &record{Version: "1"}, &overrides{}, nil, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.lock.encode()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), LockFile)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := readLock(p)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.encode()
	if !bytes.Equal(data, again) {
		t.Errorf("the lock changed on a round trip:\n%s\n---\n%s", data, again)
	}
	if l, err := readLock(filepath.Join(t.TempDir(), "none.yaml")); err != nil || len(l.Types) != 0 {
		t.Errorf("missing lock: %v, %v", l, err)
	}
	if err := os.WriteFile(p, []byte("types:\n  - name: X\n    kind: struct\n"), 0o644); err == nil {
		if _, err := readLock(p); err == nil || !strings.Contains(err.Error(), "site") {
			t.Errorf("an entry without a site: %v", err)
		}
	}
}

// TestRenameErrors: a rename into a name another type has, and one whose from
// names nothing, fail the import.
func TestRenameErrors(t *testing.T) {
	spec := testSpec([]hookSpec{{"a", "a", "a/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]},` +
		`"org":{"title":"Organization Simple","type":"object","properties":{"login":{"type":"string"}}},` +
		`"user":{"title":"User","type":"object","properties":{"name":{"type":"string"}}}}}`}}, nil)
	for _, tc := range []struct{ yaml, want string }{
		{"renames: [{from: OrganizationSimple, to: AXEvent, reason: r}]", "AXEvent is the name of another type"},
		{"renames: [{from: Nothing, to: Other, reason: r}]", "no type is named Nothing"},
	} {
		o, err := parseOverrides([]byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := importSpec(spec, nil, o, nil, func(string, ...any) {}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.yaml, err, tc.want)
		}
	}
}

// TestCompare: each kind of change, its place in the report and the bump.
func TestCompare(t *testing.T) {
	base := func() *genmodel.Schema {
		return &genmodel.Schema{
			Source: genmodel.Source{Package: specPackage, Version: "1"},
			Events: []genmodel.Event{{Name: "thing", Actions: []genmodel.Action{{Name: "made", Type: "ThingMadeEvent"}}}},
			Types: []genmodel.Type{
				{Name: "ThingMadeEvent", Kind: genmodel.KindStruct, Fields: []genmodel.Field{
					{JSON: "action", Type: "string", Required: true}, {JSON: "state", Type: "State"}}},
				{Name: "State", Kind: genmodel.KindEnum, Values: []genmodel.EnumValue{{Value: "open"}}},
			},
		}
	}
	tests := []struct {
		name     string
		change   func(s *genmodel.Schema)
		bump     string
		breaking string // the name of the one breaking change, if any
		changed  string // the name of a non-breaking change
	}{
		{"nothing", func(*genmodel.Schema) {}, "none", "", ""},
		{"description", func(s *genmodel.Schema) { s.Types[0].Description = "new words" }, "none", "", ""},
		{"enum value added", func(s *genmodel.Schema) {
			s.Types[1].Values = append(s.Types[1].Values, genmodel.EnumValue{Value: "closed"})
		}, "minor", "", `State "closed"`},
		{"enum value removed", func(s *genmodel.Schema) { s.Types[1].Values = nil }, "major", `State "open"`, ""},
		{"member added", func(s *genmodel.Schema) {
			s.Types[0].Fields = append(s.Types[0].Fields, genmodel.Field{JSON: "n", Type: "int64"})
		}, "minor", "", "ThingMadeEvent.n"},
		{"member removed", func(s *genmodel.Schema) { s.Types[0].Fields = s.Types[0].Fields[:1] }, "major", "ThingMadeEvent.state", ""},
		{"member now required, pinned", func(s *genmodel.Schema) {
			s.Types[0].Fields[1].Required, s.Types[0].Fields[1].Pointer = true, true
		}, "patch", "", "ThingMadeEvent.state"},
		{"member now a value", func(s *genmodel.Schema) { s.Types[0].Fields[1].Required = true }, "major", "ThingMadeEvent.state", ""},
		{"member type", func(s *genmodel.Schema) { s.Types[0].Fields[1].Type = "string" }, "major", "ThingMadeEvent.state", ""},
		{"action added", func(s *genmodel.Schema) {
			s.Events[0].Actions = append(s.Events[0].Actions, genmodel.Action{Name: "sold", Type: "ThingMadeEvent"})
		}, "minor", "", "thing.sold"},
		{"action removed", func(s *genmodel.Schema) { s.Events[0].Actions = nil }, "major", "thing.made", ""},
		{"event removed", func(s *genmodel.Schema) { s.Events = nil }, "major", "thing", ""},
		{"variants", func(s *genmodel.Schema) { s.Events[0].NotSentBy = []string{"ghes-3.14"} }, "patch", "", "thing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(s)
			r := compare(base(), s)
			if r.Bump != tc.bump {
				t.Errorf("bump %s, want %s (%+v %+v)", r.Bump, tc.bump, r.Breaking, r.Changes)
			}
			switch {
			case tc.breaking == "" && len(r.Breaking) > 0:
				t.Errorf("breaking %+v, want none", r.Breaking)
			case tc.breaking != "" && (len(r.Breaking) == 0 || r.Breaking[0].Name != tc.breaking):
				t.Errorf("breaking %+v, want %s", r.Breaking, tc.breaking)
			}
			if tc.changed != "" {
				found := false
				for _, c := range r.Changes {
					found = found || c.Name == tc.changed
				}
				if !found {
					t.Errorf("changes %+v lack %s", r.Changes, tc.changed)
				}
			}
			md := r.Markdown()
			if len(r.Breaking) > 0 && strings.Index(md, "### Breaking changes") > strings.Index(md, "`"+r.Breaking[0].Name+"`") {
				t.Errorf("breaking changes are not listed first:\n%s", md)
			}
			if _, err := r.JSON(); err != nil {
				t.Error(err)
			}
		})
	}
	// A first import compares with nothing.
	if r := compare(nil, base()); r.Bump != "minor" || r.From != "" || r.Counts["event"]["added"] != 1 {
		t.Errorf("first import: %+v", r)
	}
}

// TestReportNewFirst: an update's report names its new events and the new
// actions of known events before anything else, in the summary and in the
// CHANGELOG section, and lists a new action once.
func TestReportNewFirst(t *testing.T) {
	old := &genmodel.Schema{
		Source: genmodel.Source{Package: specPackage, Version: "1"},
		Events: []genmodel.Event{{Name: "thing", Actions: []genmodel.Action{{Name: "made", Type: "Thing"}}}},
		Types: []genmodel.Type{{Name: "Thing", Kind: genmodel.KindStruct, Fields: []genmodel.Field{
			{JSON: "action", Type: "string", Required: true}, {JSON: "gone", Type: "string"}}}},
	}
	upd := &genmodel.Schema{
		Source: genmodel.Source{Package: specPackage, Version: "2"},
		Events: []genmodel.Event{
			{Name: "other", Actions: []genmodel.Action{{Name: "began", Type: "Thing"}}},
			{Name: "thing", Actions: []genmodel.Action{{Name: "made", Type: "Thing"}, {Name: "sold", Type: "Thing"}}},
		},
		Types: []genmodel.Type{{Name: "Thing", Kind: genmodel.KindStruct, Fields: []genmodel.Field{
			{JSON: "action", Type: "string", Required: true}}}},
	}
	r := compare(old, upd)
	if len(r.Breaking) == 0 {
		t.Fatal("a removed member is not breaking")
	}
	md := r.Markdown()
	events, actions, breaking := strings.Index(md, "### New events"), strings.Index(md, "### New actions"), strings.Index(md, "### Breaking changes")
	if events < 0 || actions < events || breaking < actions {
		t.Errorf("new events (%d), new actions (%d) and breaking changes (%d) out of order:\n%s", events, actions, breaking, md)
	}
	if n := strings.Count(md, "`thing.sold`"); n != 1 {
		t.Errorf("the new action is listed %d times:\n%s", n, md)
	}
	sum := r.Summary()
	if ev, ac, counts := strings.Index(sum, "New event other"), strings.Index(sum, "New action thing.sold"), strings.Index(sum, "events: +"); ev < 0 || ac < ev || counts < ac {
		t.Errorf("the summary does not name what is new first:\n%s", sum)
	}
}

// TestCompareCommand: -compare of two spec files prints the report, writes JSON,
// and -fail-on-breaking exits 3 on a breaking update.
func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1.json")
	v2 := filepath.Join(dir, "v2.json")
	if err := os.WriteFile(v1, permsSpec([]string{"members"}, false, true), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v2, permsSpec([]string{"actions", "members"}, false, false), 0o644); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "report.json")
	var stderr bytes.Buffer
	if code := Run([]string{"-compare", "-overrides", "", "-report", "-", "-report-json", js, "-fail-on-breaking", v1, v2}, &stderr); code != 3 {
		t.Errorf("exit %d, want 3\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "### Breaking changes") || !strings.Contains(stderr.String(), "ThingMadeEvent.req") {
		t.Errorf("report:\n%s", stderr.String())
	}
	var rep Report
	readJSON(t, js, &rep)
	if rep.Bump != "major" || rep.Counts["member"]["added"] != 1 {
		t.Errorf("JSON report %+v", rep)
	}
	stderr.Reset()
	if code := Run([]string{"-compare", "-overrides", "", v1, v1}, &stderr); code != 0 || !strings.Contains(stderr.String(), "bump none") {
		t.Errorf("same spec: exit %d\n%s", code, stderr.String())
	}
}

// ExampleReport_Summary reports an update that added an action and removed an enum
// value: the removal breaks compiled code (its constant goes), so the bump is major.
func ExampleReport_Summary() {
	old := &genmodel.Schema{
		Source: genmodel.Source{Package: specPackage, Version: "1.0.0"},
		Events: []genmodel.Event{{Name: "thing", Actions: []genmodel.Action{{Name: "made", Type: "ThingMadeEvent"}}}},
		Types: []genmodel.Type{
			{Name: "ThingMadeEvent", Kind: genmodel.KindStruct, Fields: []genmodel.Field{{JSON: "state", Type: "State"}}},
			{Name: "State", Kind: genmodel.KindEnum, Values: []genmodel.EnumValue{{Value: "open"}, {Value: "shut"}}},
		},
	}
	new := &genmodel.Schema{
		Source: genmodel.Source{Package: specPackage, Version: "1.1.0"},
		Events: []genmodel.Event{{Name: "thing", Actions: []genmodel.Action{{Name: "made", Type: "ThingMadeEvent"}, {Name: "sold", Type: "ThingMadeEvent"}}}},
		Types: []genmodel.Type{
			{Name: "ThingMadeEvent", Kind: genmodel.KindStruct, Fields: []genmodel.Field{{JSON: "state", Type: "State"}}},
			{Name: "State", Kind: genmodel.KindEnum, Values: []genmodel.EnumValue{{Value: "open"}}},
		},
	}
	r := compare(old, new)
	fmt.Print(r.Summary())
	for _, c := range r.Breaking {
		fmt.Println("breaking:", c.What, c.Op, c.Name)
	}
	// Output:
	// @octokit/openapi-webhooks 1.0.0 → 1.1.0: implied version bump major; breaking changes: 1.
	// New action thing.sold.
	// events: +0 −0 ~0. actions: +1 −0 ~0. types: +0 −0 ~0. members: +0 −0 ~0. enum values: +0 −1 ~0. variants: +0 −0 ~0.
	// breaking: enum value removed State "shut"
}
