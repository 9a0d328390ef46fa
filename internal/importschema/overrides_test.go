package importschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

func TestParseOverrides(t *testing.T) {
	tests := []struct {
		name, yaml, err string
	}{
		{"empty", "", ""},
		{"comments only", "# nothing\n", ""},
		{"all kinds", `
names: [{name: a.b, like: a.c, reason: r}]
renames: [{from: A, to: B, reason: r}]
field_names: [{json: "+1", name: PlusOne, reason: r}]
enum_values: [{in: E, add: [x], reason: r}]
types: [{name: T, kind: struct, reason: r}]
fields: [{in: S, json: k, type: "[]*T", reason: r}]
optional: [{in: S, json: [k], reason: r}]
`, ""},
		{"no reason", "renames: [{from: A, to: B}]", "needs a reason"},
		{"blank reason", "renames: [{from: A, to: B, reason: '  '}]", "needs a reason"},
		{"unknown key", "renames: [{from: A, too: B, reason: r}]", "field too not found"},
		{"unknown kind", "colours: []", "field colours not found"},
		{"bad type", "fields: [{in: S, json: k, type: '*T', reason: r}]", `"*" only marks`},
		{"names without like", "names: [{name: a.b, reason: r}]", "needs name and like"},
		{"enum without values", "enum_values: [{in: E, reason: r}]", "needs in and add"},
		{"type without kind", "types: [{name: T, reason: r}]", "needs name and kind"},
		{"optional without keys", "optional: [{in: S, reason: r}]", "needs in and json"},
		{"required without keys", "required: [{in: S, reason: r}]", "needs in and json"},
		{"not yaml", "names: [", "did not find expected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseOverrides([]byte(tc.yaml))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, errOverride) {
				t.Fatalf("got %v, want an errOverride containing %q", err, tc.err)
			}
		})
	}
}

// smallSchema is a schema to apply overrides to.
func smallSchema() *genmodel.Schema {
	return &genmodel.Schema{
		Events: []genmodel.Event{{Name: "issues", Actions: []genmodel.Action{
			{Name: "closed", Type: "IssuesClosedEvent"}, {Name: "opened", Type: "IssuesOpenedEvent"}}}},
		Types: []genmodel.Type{
			{Name: "IssueState", Kind: genmodel.KindEnum, Values: []genmodel.EnumValue{{Value: "open"}}},
			{Name: "IssuesClosedEvent", Kind: genmodel.KindStruct, Description: "closed", Fields: []genmodel.Field{
				{JSON: "action", Type: "string", Required: true}, {JSON: "+1", Type: "int64"},
				{JSON: "state", Type: "IssueState", Required: true}}},
			{Name: "IssuesOpenedEvent", Kind: genmodel.KindStruct, Fields: []genmodel.Field{{JSON: "action", Type: "string", Required: true}}},
		},
	}
}

func TestApplyOverrides(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, s *genmodel.Schema)
		warn  string // a substring of the one warning expected; "" for none
		err   string
	}{
		{
			name: "names copy a payload",
			yaml: "names: [{name: issues.reopened, like: issues.closed, reason: older servers}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				var acts []string
				for _, a := range s.Events[0].Actions {
					acts = append(acts, a.Name+"="+a.Type)
				}
				if d := cmp.Diff([]string{"closed=IssuesClosedEvent", "opened=IssuesOpenedEvent", "reopened=IssuesReopenedEvent"}, acts); d != "" {
					t.Error(d)
				}
				r := typeOf(s, "IssuesReopenedEvent")
				if r == nil || len(r.Fields) != 3 || !strings.Contains(r.Description, "IssuesClosedEvent") {
					t.Errorf("copy: %+v", r)
				}
				// The reason is said once, by the action, not again by its type.
				if a := s.Events[0].Actions[2]; a.Description != "older servers" || strings.Contains(r.Description, "older servers") {
					t.Errorf("action %+v, type description %q: the reason belongs to the action alone", a, r.Description)
				}
				// The copy is deep: editing it leaves the original.
				r.Fields[0].JSON = "x"
				if typeOf(s, "IssuesClosedEvent").Fields[0].JSON != "action" {
					t.Error("the copy shares its fields with the original")
				}
			},
		},
		{name: "names no-op", yaml: "names: [{name: issues.opened, like: issues.closed, reason: r}]", warn: "names issues.opened: the spec has it now"},
		{name: "names across events", yaml: "names: [{name: issues.x, like: push.y, reason: r}]", err: "both must be event.action of one event"},
		{name: "names unknown event", yaml: "names: [{name: nope.x, like: nope.y, reason: r}]", err: "no event nope"},
		{name: "names unknown like", yaml: "names: [{name: issues.x, like: issues.y, reason: r}]", err: "no action issues.y"},
		{
			name: "field names",
			yaml: `field_names: [{json: "+1", name: PlusOne, reason: r}]`,
			check: func(t *testing.T, s *genmodel.Schema) {
				if f := fieldOf(typeOf(s, "IssuesClosedEvent"), "+1"); f.Name != "PlusOne" {
					t.Errorf("name %q", f.Name)
				}
			},
		},
		{name: "field names no-op", yaml: `field_names: [{json: "-1", name: MinusOne, reason: r}]`, warn: `field_names "-1": no member has that key`},
		{
			name: "enum values",
			yaml: "enum_values: [{in: IssueState, add: [closed, open], reason: seen}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if v := typeOf(s, "IssueState").Values; len(v) != 2 || v[1].Value != "closed" {
					t.Errorf("values %+v", v)
				}
			},
		},
		{name: "enum values no-op", yaml: "enum_values: [{in: IssueState, add: [open], reason: r}]", warn: "the spec has open"},
		{name: "enum values no enum", yaml: "enum_values: [{in: Nope, add: [x], reason: r}]", warn: "no enum of that name"},
		{
			name: "fields change and add",
			yaml: `fields: [{in: IssuesClosedEvent, json: state, required: false, nullable: true, reason: r},
                           {in: IssuesClosedEvent, json: extra, type: "[]string", description: d, reason: r}]`,
			check: func(t *testing.T, s *genmodel.Schema) {
				typ := typeOf(s, "IssuesClosedEvent")
				if f := fieldOf(typ, "state"); f.Required || !f.Nullable {
					t.Errorf("state %+v", f)
				}
				if f := fieldOf(typ, "extra"); f == nil || f.Type != "[]string" || f.Description != "d" {
					t.Errorf("extra %+v", f)
				}
			},
		},
		{name: "fields no-op", yaml: "fields: [{in: IssuesClosedEvent, json: state, required: true, reason: r}]", warn: "the spec says so already"},
		{name: "fields missing member", yaml: "fields: [{in: IssuesClosedEvent, json: nope, required: true, reason: r}]", warn: "no such member"},
		{name: "fields no struct", yaml: "fields: [{in: Nope, json: x, type: string, reason: r}]", warn: "no struct Nope"},
		{
			name: "optional",
			yaml: "optional: [{in: IssuesClosedEvent, json: [state], reason: old payloads}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if fieldOf(typeOf(s, "IssuesClosedEvent"), "state").Required {
					t.Error("still required")
				}
			},
		},
		{
			name: "names other actions",
			yaml: "names: [{name: 'issues.*', like: issues.closed, reason: free-form}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if e := s.Events[0]; e.OtherActionsType != "IssuesClosedEvent" || len(e.Actions) != 2 {
					t.Errorf("other actions %q, %d actions; want IssuesClosedEvent and the 2 of the spec", e.OtherActionsType, len(e.Actions))
				}
			},
		},
		{
			// Set by the first entry, so the second is a no-op, quiet for
			// older specs.
			name: "names other actions older specs",
			yaml: "names: [{name: 'issues.*', like: issues.closed, reason: r}, {name: 'issues.*', like: issues.opened, older_specs: true, reason: r}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if got := s.Events[0].OtherActionsType; got != "IssuesClosedEvent" {
					t.Errorf("other actions %q, want the first entry's IssuesClosedEvent", got)
				}
			},
		},
		{name: "names other actions no-op", yaml: "names: [{name: 'issues.*', like: issues.closed, reason: r}, {name: 'issues.*', like: issues.opened, reason: r}]", warn: "names issues.*: the spec has it now"},
		{name: "names older specs no-op", yaml: "names: [{name: issues.opened, like: issues.closed, older_specs: true, reason: r}]"},
		{name: "optional no-op", yaml: "optional: [{in: IssuesClosedEvent, json: ['+1'], reason: r}]", warn: "the spec has it optional"},
		{
			// An entry for older spec versions is quiet where the spec
			// already says so or lacks the member, and applies where not.
			name: "optional older specs",
			yaml: "optional: [{in: IssuesClosedEvent, json: ['+1', nope, state], older_specs: true, reason: r}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if fieldOf(typeOf(s, "IssuesClosedEvent"), "state").Required {
					t.Error("state still required")
				}
			},
		},
		{name: "optional older specs no struct", yaml: "optional: [{in: Nope, json: [state], older_specs: true, reason: r}]", warn: "no struct Nope"},
		{
			name: "required",
			yaml: "required: [{in: IssuesClosedEvent, json: ['+1'], reason: always sent}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				if !fieldOf(typeOf(s, "IssuesClosedEvent"), "+1").Required {
					t.Error("still optional")
				}
			},
		},
		{name: "required no-op", yaml: "required: [{in: IssuesClosedEvent, json: [state], reason: r}]", warn: "the spec has it required"},
		{name: "required no member", yaml: "required: [{in: IssuesClosedEvent, json: [nope], reason: r}]", warn: "no such member"},
		{
			name: "types",
			yaml: "types: [{name: Extra, kind: enum, values: [{value: a}], reason: needed}]",
			check: func(t *testing.T, s *genmodel.Schema) {
				e := typeOf(s, "Extra")
				if e == nil || e.Kind != genmodel.KindEnum || !strings.Contains(e.Description, "needed") {
					t.Errorf("added %+v", e)
				}
				for i := 1; i < len(s.Types); i++ {
					if s.Types[i-1].Name > s.Types[i].Name {
						t.Error("types not sorted after the addition")
					}
				}
			},
		},
		{name: "types clash", yaml: "types: [{name: IssueState, kind: enum, values: [{value: a}], reason: r}]", err: "the spec has a type of that name now"},
		{name: "renames nothing", yaml: "renames: [{from: Nope, to: Other, reason: r}]", err: "no type is named Nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOverrides([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			s := smallSchema()
			warns, err := o.apply(s, map[string]bool{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.warn == "" && len(warns) > 0:
				t.Errorf("unexpected warnings %q", warns)
			case tc.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], tc.warn) || !strings.HasPrefix(warns[0], "override has no effect")):
				t.Errorf("warnings %q, want one about %q", warns, tc.warn)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// TestRenames checks that a rename applies during naming, so that the names made
// from the renamed type's place follow it.
func TestRenames(t *testing.T) {
	spec := testSpec([]hookSpec{{"a", "a", "a/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]},` +
		`"org":{"title":"Organization Simple","type":"object","properties":{"plan":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`}}, nil)
	o, err := parseOverrides([]byte("renames: [{from: OrganizationSimple, to: Organization, reason: shorter}]"))
	if err != nil {
		t.Fatal(err)
	}
	var warns []string
	res, err := importSpec(spec, nil, o, nil, func(f string, a ...any) { warns = append(warns, f) })
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Errorf("warnings %q", warns)
	}
	if typeOf(res.schema, "Organization") == nil || typeOf(res.schema, "OrganizationPlan") == nil {
		t.Errorf("types %v, want Organization and OrganizationPlan", typeNames(res.schema))
	}
}
