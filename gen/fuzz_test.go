package gen

import (
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"

	"forgehooks.dev/forgehooks/gen/model"
)

// FuzzGenerate: a schema that model.Parse accepts, whatever its names hold,
// generates either Go that parses or a *GenerateError that says why not;
// never a panic or a file that does not render.
func FuzzGenerate(f *testing.F) {
	for _, dir := range []string{fixtureDir} {
		events, err := os.ReadFile(filepath.Join(dir, model.EventsFile))
		if err != nil {
			f.Fatal(err)
		}
		types, err := os.ReadFile(filepath.Join(dir, model.TypesFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(events), string(types))
	}
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: struct, fields: [{json: b, type: string}]}]")
	f.Add("events: [{name: a, actions: [{name: x, type: A}, {name: y.z, type: A}]}]",
		"types: [{name: A, kind: struct, fields: [{json: e, type: E}, {json: u, type: U}, {json: m, type: \"map[string][]*E\"}]}, "+
			"{name: E, kind: enum, values: [{value: \"x\"}, {value: \"X\"}, {value: \"+1\"}]}, "+
			"{name: U, kind: union, variants: [{type: string, match: {json: string}}, {type: \"[]E\", match: {json: array}}]}]")
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: struct, fields: [{json: \"中\", type: string}, {json: \"ß\", type: int64}]}]")
	f.Add("events: [{name: a, type: A}]", "types: [{name: A, kind: struct, fields: [{json: e, type: E}]}, {name: E, kind: enum, values: [{value: \"\\u00a0\"}, {value: \"é\"}]}]")
	f.Fuzz(func(t *testing.T, events, types string) {
		s, err := model.Parse("fuzz", []byte(events), []byte(types), nil)
		if err != nil {
			return
		}
		files, err := Generate(s, DefaultOptions)
		if err != nil {
			var ge *GenerateError
			if !errors.As(err, &ge) {
				t.Fatalf("Generate: %v, want a *GenerateError", err)
			}
			return
		}
		fset := token.NewFileSet()
		for _, file := range files {
			if _, err := parser.ParseFile(fset, file.Name, file.Content, parser.SkipObjectResolution); err != nil {
				t.Fatalf("%s does not parse: %v", file.Name, err)
			}
		}
	})
}

// FuzzGenerateNames puts fuzzed names where a schema has names (a member's
// JSON key, an enum value, a union variant's has key and equals value, an
// event, an action, a description) in an otherwise valid schema: what
// model.Check accepts generates Go that parses, or a *GenerateError; the
// names that Check refuses (NUL, other control characters, a byte order mark,
// invalid UTF-8) never reach Generate.
func FuzzGenerateNames(f *testing.F) {
	for _, n := range [][6]string{
		{"html_url", "in_progress", "has", "issues", "opened", "A doc."},
		{"a\x00b", "x", "k", "e", "a", ""},
		{"\ufeffid", "\ufeff", "\ufeff", "e", "a", "\ufeff"},
		{"中", "ß", "é", "e", "a.b", "*/ x"},
		{"+1", "-1", "+1", "projects_v2", "x-y", "`"},
		{"\xff", "\xfe", "\x7f", "e\x00", "a", "\x00"},
		{"1st", "", "", "e", "a", "\\"},
	} {
		f.Add(n[0], n[1], n[2], n[3], n[4], n[5])
	}
	f.Fuzz(func(t *testing.T, key, value, has, event, action, doc string) {
		s := &model.Schema{
			Events: []model.Event{{Name: event, Description: doc, Actions: []model.Action{{Name: action, Description: doc, Type: "A"}}}},
			Types: []model.Type{
				{Name: "A", Kind: model.KindStruct, Description: doc, Fields: []model.Field{
					{JSON: key, Type: "string", Description: doc},
					{JSON: "e", Type: "E"},
					{JSON: "u", Type: "U", Nullable: true},
				}},
				{Name: "B", Kind: model.KindStruct, Fields: []model.Field{{JSON: has, Type: "int64"}}},
				{Name: "E", Kind: model.KindEnum, Description: doc, Values: []model.EnumValue{{Value: value, Description: doc}, {Value: "other"}}},
				{Name: "U", Kind: model.KindUnion, Variants: []model.Variant{
					{Type: "B", Match: model.Match{JSON: "object", Has: []string{has}, Equals: map[string]string{has: value}}},
					{Type: "string", Match: model.Match{JSON: "string"}},
				}},
			},
		}
		if err := model.Check(s); err != nil {
			if !errors.Is(err, model.ErrInvalidSchema) {
				t.Fatalf("Check: %v, want an ErrInvalidSchema", err)
			}
			return
		}
		files, err := Generate(s, DefaultOptions)
		if err != nil {
			var ge *GenerateError
			if !errors.As(err, &ge) {
				t.Fatalf("Generate: %v, want a *GenerateError", err)
			}
			return
		}
		fset := token.NewFileSet()
		for _, file := range files {
			if _, err := parser.ParseFile(fset, file.Name, file.Content, parser.SkipObjectResolution); err != nil {
				t.Fatalf("%s does not parse: %v", file.Name, err)
			}
		}
	})
}
