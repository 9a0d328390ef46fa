package model

import (
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const loadFixture = "testdata/load"

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(loadFixture, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadFixture(t *testing.T) {
	s, err := Load(loadFixture)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := len(s.Events), 3; got != want {
		t.Errorf("events: got %d, want %d", got, want)
	}
	if got, want := len(s.Types), 8; got != want {
		t.Errorf("types: got %d, want %d", got, want)
	}
	if s.Source.Version != "1.0.0" {
		t.Errorf("source version: got %q", s.Source.Version)
	}
	if got := s.Events[2].OtherActionsType; got != "RepositoryDispatchEvent" {
		t.Errorf("other_actions_type: got %q", got)
	}
	got := strings.Join(loadNames(s), " ")
	want := "issues issues.closed issues.opened push repository_dispatch repository_dispatch.sample.collected"
	if got != want {
		t.Errorf("names:\n got %s\nwant %s", got, want)
	}
}

// TestLoadProblems changes one thing of the valid fixture per case and expects Load
// to name the problem.
func TestLoadProblems(t *testing.T) {
	tests := []struct {
		name     string
		file     string // which file the edit applies to
		old, new string
		want     string // a substring of one problem
	}{
		{"unknown type in field", TypesFile, "type: IssueState", "type: IssueStatus", `type "IssueStatus" is not defined`},
		{"unknown type in array", TypesFile, "'[]*Label'", "'[]*Labels'", `type "Labels" is not defined`},
		{"bad expression", TypesFile, "type: map[string]string", "type: map[int]string", "map keys must be string"},
		{"pointer field", TypesFile, "type: timestamp", "type: '*timestamp'", `"*" only marks an array element or map value`},
		{"unknown builtin", TypesFile, "type: int64\n        required: true\n      - json: state", "type: int\n        required: true\n      - json: state", `"int" is neither a builtin`},
		{"duplicate type", TypesFile, "name: LabelObject\n", "name: Label\n", "duplicate type name"},
		{"types unsorted", TypesFile, "name: PushEvent", "name: APushEvent", "not sorted"},
		{"bad type name", TypesFile, "name: Issue\n", "name: issue\n", "not an exported Go identifier"},
		{"bad kind", TypesFile, "kind: union", "kind: interface", `kind "interface"`},
		{"duplicate json key", TypesFile, "json: closed_at", "json: labels", "duplicate json key"},
		{"enum without values", TypesFile, "    values:\n      - value: open\n      - value: closed\n", "", "at least one value"},
		{"duplicate enum value", TypesFile, "value: closed", "value: open", `duplicate value "open"`},
		{"int enum", TypesFile, "kind: enum\n", "kind: enum\n    base: int64\n", `"open" is not an int64`},
		{"bad base", TypesFile, "kind: enum\n", "kind: enum\n    base: bool\n", "neither string nor int64"},
		{"bad match kind", TypesFile, "json: string\n", "json: text\n", `match json "text"`},
		{"has needs object", TypesFile, "json: string\n", "json: string\n          has: [x]\n", "need json object"},
		{"unknown yaml key", TypesFile, "required: true\n      - json: state", "requried: true\n      - json: state", "field requried not found"},
		{"payload type missing", EventsFile, "type: PushEvent", "type: PushPayload", `payload type "PushPayload" is not defined`},
		{"payload not struct", EventsFile, "type: PushEvent", "type: IssueState", "is a enum, not a struct"},
		{"type and actions", EventsFile, "  - name: push\n", "  - name: push\n    actions: [{name: x, type: PushEvent}]\n", "not both"},
		{"neither type nor actions", EventsFile, "    type: PushEvent\n", "", "needs a type or actions"},
		{"events unsorted", EventsFile, "name: push", "name: a_push", "not sorted"},
		{"actions unsorted", EventsFile, "name: closed", "name: reopened", "not sorted"},
		{"unknown variant of an event", EventsFile, "  - name: push\n", "  - name: push\n    not_sent_by: [ghes-3.16]\n", `not_sent_by: "ghes-3.16" is not one of the source's variants`},
		{"unknown variant of a field", TypesFile, "json: closed_at\n", "json: closed_at\n        not_sent_by: [ghec]\n", `"closed_at": not_sent_by: "ghec"`},
		{"action without type", EventsFile, "        type: IssuesClosedEvent\n", "", "action has no type"},
		{"bad event name", EventsFile, "name: push", "name: Push", "[a-z0-9_]"},
		{"other actions without actions", EventsFile, "    type: PushEvent\n", "    type: PushEvent\n    other_actions_type: PushEvent\n", "other_actions_type needs actions"},
		{"contract name missing", ContractFile, "push\n", "pull_request\n", `names-original.txt:4: name "pull_request" is missing`},
		{"contract action missing", ContractFile, "issues.opened\n", "issues.edited\n", `name "issues.edited" is missing`},
		{"empty events file", EventsFile, "", "", "empty file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{EventsFile, TypesFile, ContractFile} {
				text := readFixture(t, f)
				if f == tc.file {
					if tc.name == "empty events file" {
						text = ""
					} else if !strings.Contains(text, tc.old) {
						t.Fatalf("fixture %s lacks %q", f, tc.old)
					} else {
						text = strings.Replace(text, tc.old, tc.new, 1)
					}
				}
				if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded; want a problem containing %q", tc.want)
			}
			if !errors.Is(err, ErrInvalidSchema) {
				t.Errorf("error %v does not wrap ErrInvalidSchema", err)
			}
			var se *SchemaError
			if !errors.As(err, &se) || se.Dir != dir {
				t.Errorf("error %v is not a *SchemaError for %s", err, dir)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	s, err := Load(loadFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(s); err != nil {
		t.Fatalf("Check of a loaded schema: %v", err)
	}
	s.Types[0].Fields[0].Type = "Nope"
	err = Check(s)
	if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), `type "Nope" is not defined`) {
		t.Fatalf("Check: got %v", err)
	}
}

func TestLoadMissingFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty dir: got %v, want fs.ErrNotExist", err)
	}
	// Without the contract file, there is no contract to check.
	for _, f := range []string{EventsFile, TypesFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(readFixture(t, f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("without contract: %v", err)
	}
}

func TestParseTypeExpr(t *testing.T) {
	tests := []struct {
		in    string
		kind  ExprKind
		names []string
		err   string
	}{
		{in: "string", kind: ExprBuiltin},
		{in: "timestamp", kind: ExprBuiltin},
		{in: "raw", kind: ExprBuiltin},
		{in: "Repository", kind: ExprNamed, names: []string{"Repository"}},
		{in: "[]string", kind: ExprArray},
		{in: "[]*User", kind: ExprArray, names: []string{"User"}},
		{in: "map[string]*[]Label", kind: ExprMap, names: []string{"Label"}},
		{in: "[][]int64", kind: ExprArray},
		{in: "", err: "missing type"},
		{in: "[]", err: "missing type"},
		{in: "*User", err: `"*" only marks`},
		{in: "[]**User", err: "neither a builtin"},
		{in: "map[int]User", err: "map keys must be string"},
		{in: "user", err: "neither a builtin"},
		{in: "interface{}", err: "neither a builtin"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseTypeExpr(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidSchema) {
					t.Fatalf("got %v, %v; want error containing %q", e, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tc.kind {
				t.Errorf("kind: got %d, want %d", e.Kind, tc.kind)
			}
			if e.String() != tc.in {
				t.Errorf("String: got %q", e.String())
			}
			if fmt.Sprint(e.Names()) != fmt.Sprint(tc.names) {
				t.Errorf("Names: got %v, want %v", e.Names(), tc.names)
			}
		})
	}
}

// TestLoadSchemaDir loads the committed schema, the one the generator reads.
func TestLoadSchemaDir(t *testing.T) {
	dir := filepath.Join("..", "schema")
	if _, err := os.Stat(filepath.Join(dir, EventsFile)); errors.Is(err, fs.ErrNotExist) {
		t.Skip("no schema/ yet")
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ContractFile)); err != nil {
		t.Fatalf("the committed schema must carry its contract: %v", err)
	}
	t.Logf("%d events, %d names, %d types", len(s.Events), len(loadNames(s)), len(s.Types))
}

func ExampleLoad() {
	s, err := Load("testdata/load")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range s.Events {
		fmt.Print(ev.Name, ":")
		for _, a := range ev.Actions {
			fmt.Print(" ", a.Name, "=", a.Type)
		}
		if ev.Type != "" {
			fmt.Print(" ", ev.Type)
		}
		fmt.Println()
	}
	// Output:
	// issues: closed=IssuesClosedEvent opened=IssuesOpenedEvent
	// push: PushEvent
	// repository_dispatch: sample.collected=RepositoryDispatchEvent
}

func ExampleParseTypeExpr() {
	e, err := ParseTypeExpr("[]*Label")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Kind == ExprArray, e.ElemNullable, e.Elem.Name)
	_, err = ParseTypeExpr("*Label")
	fmt.Println(err)
	// Output:
	// true true Label
	// type expression "*Label": invalid schema: "*" only marks an array element or map value
}

func FuzzParseTypeExpr(f *testing.F) {
	for _, s := range []string{"string", "[]*User", "map[string][]*raw", "*x", "map[", "[][]", "Repository"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseTypeExpr(s)
		if err != nil {
			return
		}
		// What parses prints back as itself.
		if e.String() != s {
			t.Fatalf("ParseTypeExpr(%q).String() = %q", s, e.String())
		}
	})
}

// FuzzParse: any bytes give either a *SchemaError that wraps ErrInvalidSchema
// and names at least one problem, or a schema that Check accepts (so that
// what Parse lets through reaches the generator checked, whatever its names
// hold: NUL, a byte order mark, invalid UTF-8).
func FuzzParse(f *testing.F) {
	f.Add(readFixture(f, EventsFile), readFixture(f, TypesFile), readFixture(f, ContractFile))
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: struct}]", "a\nb")
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: struct, fields: [{json: \"a\\0b\", type: string}]}]", "")
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: enum, values: [{value: \"\\uFEFFx\"}]}]", "")
	f.Add("events: 3", "types: {}", "")
	f.Fuzz(func(t *testing.T, events, types, contract string) {
		var c []byte
		if contract != "" {
			c = []byte(contract)
		}
		s, err := Parse("fuzz", []byte(events), []byte(types), c)
		if err != nil {
			var se *SchemaError
			if !errors.Is(err, ErrInvalidSchema) || !errors.As(err, &se) || len(se.Problems) == 0 || s != nil {
				t.Fatalf("Parse: %v (schema %v), want a *SchemaError with problems", err, s)
			}
			return
		}
		if err := Check(s); err != nil {
			t.Fatalf("Parse accepted a schema that Check refuses: %v", err)
		}
	})
}

// FuzzGoName: a name GoName gives is an exported Go identifier, whatever the
// key; a key it cannot name gets an error (the schema then gives the name).
func FuzzGoName(f *testing.F) {
	for _, s := range []string{"node_id", "html_url", "+1", "-1", "_links", "1st", "", "a\x00b", "\ufeffid", "\xff", "中文", "ǅemal", "ß_x", "Ⅻ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := GoName(s)
		if err != nil {
			return
		}
		if !token.IsIdentifier(name) || !token.IsExported(name) {
			t.Fatalf("GoName(%q) = %q: not an exported Go identifier", s, name)
		}
	})
}

// TestCheckUnprintableNames: a NUL, another control character or a byte
// order mark in a JSON key or an enum value is a problem Check names,
// not a failure later in generation.
func TestCheckUnprintableNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(s *Schema) bool
		want string
	}{
		{"NUL in a json key", func(s *Schema) bool {
			for i := range s.Types {
				if len(s.Types[i].Fields) > 0 {
					s.Types[i].Fields[0].JSON = "a\x00b"
					return true
				}
			}
			return false
		}, "control character (U+0000)"},
		{"BOM in a json key", func(s *Schema) bool {
			for i := range s.Types {
				if len(s.Types[i].Fields) > 0 {
					s.Types[i].Fields[0].JSON = "\ufeffid"
					return true
				}
			}
			return false
		}, "byte order mark"},
		{"NUL in an enum value", func(s *Schema) bool {
			for i := range s.Types {
				if len(s.Types[i].Values) > 0 {
					s.Types[i].Values[0].Value = "x\x00"
					return true
				}
			}
			return false
		}, "control character (U+0000)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(loadFixture)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.edit(s) {
				t.Fatal("the fixture has nothing to edit")
			}
			if err := Check(s); !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check: %v, want a problem containing %q", err, tt.want)
			}
		})
	}
}
