package importschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// hookSpec is one webhook of a test spec.
type hookSpec struct {
	key, event, op string
	body           string // the payload schema, JSON
}

// testSpec builds a spec of webhooks and components (name → schema JSON).
func testSpec(hooks []hookSpec, comps map[string]string) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.1.0","webhooks":{`)
	for i, h := range hooks {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `%q:{"post":{"summary":"About %s.","description":"%s happened.","operationId":%q,`+
			`"requestBody":{"content":{"application/json":{"schema":%s}}},"x-github":{"subcategory":%q}}}`,
			h.key, h.event, h.key, h.op, h.body, h.event)
	}
	b.WriteString(`},"components":{"schemas":{`)
	i := 0
	for name, s := range comps {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%s", name, s)
		i++
	}
	b.WriteString(`}}}`)
	return []byte(b.String())
}

// importTest imports a spec without overrides; warnings are collected.
func importTest(t *testing.T, spec []byte) (*genmodel.Schema, []string) {
	t.Helper()
	var warns []string
	res, err := importSpec(spec, nil, &overrides{}, nil, func(f string, a ...any) { warns = append(warns, fmt.Sprintf(f, a...)) })
	if err != nil {
		t.Fatalf("importSpec: %v", err)
	}
	return res.schema, warns
}

func typeOf(s *genmodel.Schema, name string) *genmodel.Type {
	for i := range s.Types {
		if s.Types[i].Name == name {
			return &s.Types[i]
		}
	}
	return nil
}

func fieldOf(t *genmodel.Type, key string) *genmodel.Field {
	if t == nil {
		return nil
	}
	for i := range t.Fields {
		if t.Fields[i].JSON == key {
			return &t.Fields[i]
		}
	}
	return nil
}

// oneField imports a payload whose member "x" has the given schema.
func oneField(t *testing.T, schema string, comps map[string]string) (*genmodel.Schema, *genmodel.Field) {
	t.Helper()
	body := fmt.Sprintf(`{"type":"object","properties":{"x":%s},"required":["x"]}`, schema)
	s, _ := importTest(t, testSpec([]hookSpec{{"thing", "thing", "thing", body}}, comps))
	f := fieldOf(typeOf(s, "ThingEvent"), "x")
	if f == nil {
		t.Fatalf("no member x in ThingEvent")
	}
	return s, f
}

// TestConvertTypes checks how each kind of schema becomes a type expression.
func TestConvertTypes(t *testing.T) {
	obj := `{"type":"object","properties":{"a":{"type":"string"}}}`
	tests := []struct {
		name     string
		schema   string
		typ      string
		nullable bool
	}{
		{"string", `{"type":"string"}`, "string", false},
		{"uri is a string", `{"type":"string","format":"uri"}`, "string", false},
		{"date is a string", `{"type":"string","format":"date"}`, "string", false},
		{"date-time", `{"type":"string","format":"date-time"}`, "timestamp", false},
		{"integer or date-time", `{"oneOf":[{"type":"integer"},{"type":"string","format":"date-time"}]}`, "timestamp", false},
		{"nullable integer or date-time", `{"type":["null","integer","string"],"oneOf":[{"type":"integer"},{"type":"string","format":"date-time"}]}`, "timestamp", true},
		{"integer is int64", `{"type":"integer"}`, "int64", false},
		{"number", `{"type":"number"}`, "float64", false},
		{"boolean", `{"type":["boolean","null"]}`, "bool", true},
		{"free-form object", `{"type":"object"}`, "raw", false},
		{"additionalProperties true", `{"type":"object","additionalProperties":true}`, "raw", false},
		{"no constraint", `{}`, "raw", false},
		{"only null", `{"type":"null"}`, "raw", true},
		{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`, "map[string]int64", false},
		{"map of nullable", `{"type":"object","additionalProperties":{"type":["string","null"]}}`, "map[string]*string", false},
		{"array", `{"type":"array","items":{"type":"string"}}`, "[]string", false},
		{"array of nullable", `{"type":"array","items":{"type":["integer","null"]}}`, "[]*int64", false},
		{"array without items", `{"type":"array"}`, "[]raw", false},
		{"nullable array", `{"type":["array","null"],"items":{"type":"string"}}`, "[]string", true},
		{"enum", `{"type":"string","enum":["a","b"]}`, "ThingX", false},
		{"enum with null", `{"type":["string","null"],"enum":["a",null]}`, "ThingX", true},
		{"object", obj, "ThingX", false},
		{"nullable object", `{"type":["object","null"],"properties":{"a":{"type":"string"}}}`, "ThingX", true},
		{"anyOf null and ref", `{"anyOf":[{"type":"null"},{"$ref":"#/components/schemas/thing-x"}]}`, "ThingX", true},
		{"allOf of one ref", `{"allOf":[{"$ref":"#/components/schemas/thing-x"}]}`, "ThingX", false},
		{"oneOf one left", `{"oneOf":[{"type":"null"},{"type":"string"}]}`, "string", true},
		{"union by kind", `{"oneOf":[{"type":"string"},` + obj + `]}`, "ThingX", false},
		{"type list", `{"type":["string","integer"]}`, "ThingX", false},
		{"integer and number", `{"anyOf":[{"type":"number"},{"type":"integer"}]}`, "float64", false},
		{"string and enum", `{"oneOf":[{"type":"string"},{"type":"string","enum":["a"]}]}`, "ThingX", false},
	}
	comps := map[string]string{"thing-x": obj}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, f := oneField(t, tc.schema, comps)
			if f.Type != tc.typ || f.Nullable != tc.nullable {
				t.Errorf("got %s nullable=%v, want %s nullable=%v", f.Type, f.Nullable, tc.typ, tc.nullable)
			}
		})
	}
}

func TestConvertAllOf(t *testing.T) {
	comps := map[string]string{
		"base": `{"title":"Base","type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]}`,
	}
	s, f := oneField(t, `{"allOf":[{"$ref":"#/components/schemas/base"},{"type":"object","properties":{"extra":{"type":"boolean"},"name":{"type":["string","null"]}},"required":["extra"]}]}`, comps)
	typ := typeOf(s, f.Type)
	if typ == nil || typ.Kind != genmodel.KindStruct {
		t.Fatalf("allOf: got %v", f.Type)
	}
	var got []string
	for _, g := range typ.Fields {
		got = append(got, fmt.Sprintf("%s:%s:%v:%v", g.JSON, g.Type, g.Required, g.Nullable))
	}
	want := []string{"id:int64:true:false", "name:string:false:true", "extra:bool:true:false"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("allOf members (-want +got):\n%s", d)
	}
	if f.Type != "Base" {
		t.Errorf("allOf named %s, want Base (the first part's title)", f.Type)
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want string
	}{
		{"not JSON", `{`, "bad JSON"},
		{"no webhooks", `{"components":{"schemas":{}}}`, "no webhooks"},
		{"no components", `{"webhooks":{}}`, "no components.schemas"},
		{"no subcategory", string(testSpec([]hookSpec{{"a", "", "a", `{"type":"object","properties":{"b":{}}}`}}, nil)), "no x-github.subcategory"},
		{"missing ref", string(testSpec([]hookSpec{{"a", "a", "a", `{"$ref":"#/components/schemas/nope"}`}}, nil)), `missing component "nope"`},
		{"foreign ref", string(testSpec([]hookSpec{{"a", "a", "a", `{"type":"object","properties":{"b":{"$ref":"other.json#/x"}}}`}}, nil)), "is not a component schema"},
		{"payload not an object", string(testSpec([]hookSpec{{"a", "a", "a", `{"type":"string"}`}}, nil)), "payload is not an object"},
		{"unknown type", string(testSpec([]hookSpec{{"a", "a", "a", `{"type":"object","properties":{"b":{"type":"decimal"}}}`}}, nil)), `unknown type "decimal"`},
		{"two webhooks, one name", string(testSpec([]hookSpec{
			{"a1", "a", "a/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]}}}`},
			{"a2", "a", "a/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]}}}`}}, nil)), "both give a.x"},
		{"free-form action without sample", string(testSpec([]hookSpec{{"a", "a", "a", `{"type":"object","properties":{"action":{"type":"string"}}}`}}, nil)), "free-form action without a sample name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importSpec([]byte(tc.spec), nil, &overrides{}, nil, func(string, ...any) {})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, errSpec) && !errors.Is(err, errJSON) {
				t.Errorf("error %v is neither errSpec nor errJSON", err)
			}
		})
	}
}

// TestActions checks where event names and actions come from.
func TestActions(t *testing.T) {
	action := func(vals ...string) string {
		return fmt.Sprintf(`{"type":"object","properties":{"action":{"type":"string","enum":["%s"]},"n":{"type":"integer"}},"required":["action"]}`,
			strings.Join(vals, `","`))
	}
	spec := testSpec([]hookSpec{
		{"issues-opened", "issues", "issues/opened", action("opened")},
		{"issues-two", "issues", "issues/two", action("closed", "reopened")},
		{"sub-issues-added", "sub-issues", "sub-issues/added", action("parent_issue_added")},
		{"push", "push", "push", `{"type":"object","properties":{"ref":{"type":"string"}}}`},
		{"repository-dispatch-sample.collected", "repository_dispatch", "repository-dispatch/sample.collected",
			`{"type":"object","properties":{"action":{"type":"string"}}}`},
	}, nil)
	s, _ := importTest(t, spec)
	var got []string
	for _, e := range s.Events {
		got = append(got, e.Name+"="+e.Type)
		for _, a := range e.Actions {
			got = append(got, e.Name+"."+a.Name+"="+a.Type)
		}
		if e.OtherActionsType != "" {
			got = append(got, e.Name+".*="+e.OtherActionsType)
		}
	}
	want := []string{
		"issues=", "issues.closed=IssuesClosedEvent", "issues.opened=IssuesOpenedEvent", "issues.reopened=IssuesReopenedEvent",
		"push=PushEvent",
		"repository_dispatch=", "repository_dispatch.sample.collected=RepositoryDispatchSampleCollectedEvent",
		"repository_dispatch.*=RepositoryDispatchSampleCollectedEvent",
		"sub_issues=", "sub_issues.parent_issue_added=SubIssuesParentIssueAddedEvent",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	// One enum of two actions gives two structs, each with action a plain string.
	for _, n := range []string{"IssuesClosedEvent", "IssuesReopenedEvent"} {
		if f := fieldOf(typeOf(s, n), "action"); f == nil || f.Type != "string" || !f.Required {
			t.Errorf("%s.action = %+v, want a required string", n, f)
		}
	}
	if d := typeOf(s, "RepositoryDispatchSampleCollectedEvent").Description; !strings.Contains(d, "free-form") {
		t.Errorf("free-form payload's description does not say so: %q", d)
	}
}

// TestWholeBodyOneOf checks that the variants of a payload become one struct whose
// members are required only when every variant requires them.
func TestWholeBodyOneOf(t *testing.T) {
	v := func(extra string) string {
		return fmt.Sprintf(`{"type":"object","properties":{"action":{"type":"string","enum":["review_requested"]},`+
			`"number":{"type":"integer"},%q:{"type":"object","properties":{"id":{"type":"integer"}}}},"required":["action","number",%q]}`, extra, extra)
	}
	body := `{"title":"t","oneOf":[` + v("requested_reviewer") + "," + v("requested_team") + `]}`
	s, _ := importTest(t, testSpec([]hookSpec{{"pr", "pull_request", "pr/rr", body}}, nil))
	typ := typeOf(s, "PullRequestReviewRequestedEvent")
	if typ == nil {
		t.Fatal("no PullRequestReviewRequestedEvent")
	}
	var got []string
	for _, f := range typ.Fields {
		got = append(got, fmt.Sprintf("%s:%v", f.JSON, f.Required))
	}
	want := []string{"action:true", "number:true", "requested_reviewer:false", "requested_team:false"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("members (-want +got):\n%s", d)
	}
	if !strings.Contains(typ.Description, "one of 2 shapes") {
		t.Errorf("description does not document the merge: %q", typ.Description)
	}
	// Identical shapes in both variants are one type.
	if a, b := fieldOf(typ, "requested_reviewer").Type, fieldOf(typ, "requested_team").Type; a != b {
		t.Errorf("identical objects got two types: %s, %s", a, b)
	}
}

// TestMerging checks the three ways terms become one type.
func TestMerging(t *testing.T) {
	user := func(title, extra string) string {
		return fmt.Sprintf(`{"title":%q,"type":"object","properties":{"login":{"type":"string"},"id":{"type":"integer"}%s},"required":["login"]}`, title, extra)
	}
	payload := func(props string) string {
		return `{"type":"object","properties":{"action":{"type":"string","enum":["x"]},` + props + `}}`
	}
	tests := []struct {
		name  string
		hooks []hookSpec
		comps map[string]string
		// want lists "Type.member=type" facts of the result.
		want []string
	}{
		{
			name: "identical shapes merge, titles aside",
			hooks: []hookSpec{
				{"a", "a", "a/x", payload(`"u":` + user("User", "") + `,"v":` + user("Person", ""))},
			},
			want: []string{"AX.u=User", "AX.v=User"}, // a tie of votes goes to the shorter name
		},
		{
			name: "one family per title, when alike",
			hooks: []hookSpec{
				{"a", "a", "a/x", payload(`"u":` + user("User", `,"site_admin":{"type":"boolean"}`))},
				{"b", "b", "b/x", payload(`"u":` + user("User", `,"email":{"type":"string"}`))},
			},
			want: []string{"AXEvent.u=User", "BXEvent.u=User", "User.site_admin=bool", "User.email=string"},
		},
		{
			name: "a title on an unlike shape is not a family",
			hooks: []hookSpec{
				{"a", "a", "a/x", payload(`"pr":{"title":"Pull Request","type":"object","properties":{"number":{"type":"integer"},"title":{"type":"string"}}}`)},
				{"b", "b", "b/x", payload(`"rule":{"title":"pull_request","type":"object","properties":{"type":{"type":"string"},"parameters":{"type":"object"}}}`)},
			},
			want: []string{"AXEvent.pr=PullRequest", "BXEvent.rule=BRule"},
		},
		{
			name: "what sits at one member of a type is one type",
			hooks: []hookSpec{
				{"a", "a", "a/x", payload(`"issue":{"title":"Issue","type":"object","properties":{"id":{"type":"integer"},"user":` + user("Author", "") + `}}`)},
				{"b", "b", "b/x", payload(`"issue":{"title":"Issue","type":"object","properties":{"id":{"type":"integer"},"user":` + user("Poster", `,"x":{"type":"string"}`) + `}}`)},
			},
			want: []string{"Issue.user=Author", "Author.x=string"},
		},
		{
			name: "actions of one event share what is alike, not the rest",
			hooks: []hookSpec{
				{"e1", "e", "e/one", `{"type":"object","properties":{"action":{"type":"string","enum":["one"]},` +
					`"thing":{"type":"object","properties":{"id":{"type":"integer"},"a":{"type":"string"}}},` +
					`"changes":{"type":"object","properties":{"title":{"type":"string"}}}}}`},
				{"e2", "e", "e/two", `{"type":"object","properties":{"action":{"type":"string","enum":["two"]},` +
					`"thing":{"type":"object","properties":{"id":{"type":"integer"},"b":{"type":"string"}}},` +
					`"changes":{"type":"object","properties":{"owner":{"type":"string"}}}}}`},
			},
			want: []string{"EOneEvent.thing=EThing", "ETwoEvent.thing=EThing", "EThing.a=string", "EThing.b=string",
				"EOneEvent.changes=EOneChanges", "ETwoEvent.changes=ETwoChanges"},
		},
		{
			name: "an untitled object joins the family its place names",
			hooks: []hookSpec{
				{"a", "a", "a/x", payload(`"app":{"title":"App","type":"object","properties":{"permissions":{"type":"object","properties":{"issues":{"type":"string"},"checks":{"type":"string"}}}}},` +
					`"perm":{"title":"App Permissions","type":"object","properties":{"issues":{"type":"string"},"pages":{"type":"string"}}}`)},
			},
			want: []string{"App.permissions=AppPermissions", "AXEvent.perm=AppPermissions", "AppPermissions.checks=string", "AppPermissions.pages=string"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := importTest(t, testSpec(tc.hooks, tc.comps))
			for _, w := range tc.want {
				typ, rest, _ := strings.Cut(w, ".")
				key, want, _ := strings.Cut(rest, "=")
				tt := typeOf(s, typ)
				if tt == nil && strings.HasPrefix(typ, "AX") && !strings.HasSuffix(typ, "Event") {
					tt = typeOf(s, typ+"Event")
				}
				f := fieldOf(tt, key)
				if f == nil {
					t.Errorf("%s: no member %s.%s; types: %v", w, typ, key, typeNames(s))
					continue
				}
				if f.Type != want {
					t.Errorf("%s.%s = %s, want %s", typ, key, f.Type, want)
				}
			}
		})
	}
}

func typeNames(s *genmodel.Schema) []string {
	var out []string
	for _, t := range s.Types {
		out = append(out, t.Name)
	}
	return out
}

// TestUnionMatches checks how union variants are told apart.
func TestUnionMatches(t *testing.T) {
	obj := func(props, req string) string {
		return fmt.Sprintf(`{"type":"object","properties":{%s},"required":[%s]}`, props, req)
	}
	tests := []struct {
		name   string
		schema string
		want   []genmodel.Match
		err    string
	}{
		{
			name:   "by JSON kind",
			schema: `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"},{"type":"array","items":{"type":"string"}},` + obj(`"a":{"type":"string"}`, "") + `]}`,
			want:   []genmodel.Match{{JSON: "string"}, {JSON: "integer"}, {JSON: "boolean"}, {JSON: "array"}, {JSON: "object"}},
		},
		{
			name: "by a key only one has, and the rest by lacking it",
			schema: `{"oneOf":[` + obj(`"login":{"type":"string"},"id":{"type":"integer"}`, `"login","id"`) + `,` +
				obj(`"slug":{"type":"string"},"id":{"type":"integer"}`, `"slug","id"`) + `,` +
				obj(`"id":{"type":"integer"},"x":{"type":"string"}`, `"id"`) + `]}`,
			want: []genmodel.Match{{JSON: "object", Has: []string{"login"}}, {JSON: "object", Has: []string{"slug"}},
				{JSON: "object", Lacks: []string{"login", "slug"}}},
		},
		{
			name: "by a constant",
			schema: `{"oneOf":[` + obj(`"type":{"type":"string","enum":["a"]}`, `"type"`) + `,` +
				obj(`"type":{"type":"string","enum":["b"]},"p":{"type":"integer"}`, `"type"`) + `]}`,
			want: []genmodel.Match{{JSON: "object", Equals: map[string]string{"type": "a"}}, {JSON: "object", Equals: map[string]string{"type": "b"}}},
		},
		{
			name: "a map is the rest",
			schema: `{"oneOf":[` + obj(`"login":{"type":"string"}`, `"login"`) + `,` +
				`{"type":"object","additionalProperties":{"type":"integer"}}]}`,
			want: []genmodel.Match{{JSON: "object", Has: []string{"login"}}, {JSON: "object", Lacks: []string{"login"}}},
		},
		{
			name: "ambiguous objects",
			schema: `{"oneOf":[` + obj(`"a":{"type":"string"}`, "") + `,` + obj(`"b":{"type":"string"}`, "") + `,` +
				obj(`"c":{"type":"string"}`, "") + `]}`,
			err: "3 object variants have no key of their own",
		},
		{
			name:   "two enums",
			schema: `{"oneOf":[{"type":"string","enum":["a"]},{"type":"string","enum":["b"]}]}`,
			err:    "2 variants are JSON strings",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"type":"object","properties":{"x":%s}}`, tc.schema)
			res, err := importSpec(testSpec([]hookSpec{{"thing", "thing", "thing", body}}, nil), nil, &overrides{}, nil, func(string, ...any) {})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := typeOf(res.schema, fieldOf(typeOf(res.schema, "ThingEvent"), "x").Type)
			if u == nil || u.Kind != genmodel.KindUnion {
				t.Fatalf("x is %+v, want a union", u)
			}
			var got []genmodel.Match
			for _, v := range u.Variants {
				got = append(got, v.Match)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("matches (-want +got):\n%s", d)
			}
		})
	}
}

func TestGoNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"html_url", "HTMLURL"},
		{"node_id", "NodeID"},
		{"pull_request_review_comment", "PullRequestReviewComment"},
		{"projects_v2_item", "ProjectsV2Item"},
		{"sample.collected", "SampleCollected"},
		{"+1", "N1"},
		{"_links", "Links"},
		{"CheckRun", "CheckRun"},
		{"Sub-issues Summary", "SubIssuesSummary"},
		{"HTMLURL", "HTMLURL"},
		{"cvss_v3", "CVSSV3"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := goName(tc.in); got != tc.want {
			t.Errorf("goName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	titles := []struct {
		in        string
		component bool
		want      string
	}{
		{"GitHub app", false, "App"},
		{"Simple User", false, "SimpleUser"},
		{"webhooks_issue_2", true, "Issue"},
		{"organization-simple-webhooks", true, "OrganizationSimple"},
		{"secret-scanning-alert-webhook", true, "SecretScanningAlert"},
		{"repository_name_and_ref_name", false, "RepositoryNameAndRefName"},
	}
	for _, tc := range titles {
		if got := titleName(tc.in, tc.component); got != tc.want {
			t.Errorf("titleName(%q, %v) = %q, want %q", tc.in, tc.component, got, tc.want)
		}
	}
	for in, want := range map[string]string{"labels": "label", "statuses": "status", "entries": "entry",
		"branches": "branch", "commits": "commit", "analysis": "analysis", "ids": "id", "bus": "bus"} {
		if got := singular(in); got != want {
			t.Errorf("singular(%q) = %q, want %q", in, got, want)
		}
	}
	joins := []struct{ base, part, want string }{
		{"CodeScanningAlert", "Alert", "CodeScanningAlert"},
		{"Issue", "IssueFieldValue", "IssueFieldValue"},
		{"PullRequest", "RequestedReviewer", "PullRequestRequestedReviewer"},
		{"Status", "Commit", "StatusCommit"},
	}
	for _, tc := range joins {
		if got := joinName(tc.base, tc.part); got != tc.want {
			t.Errorf("joinName(%q, %q) = %q, want %q", tc.base, tc.part, got, tc.want)
		}
	}
	suffixes := []struct {
		in   []string
		want string
	}{
		{[]string{"LabelEditedChanges", "MilestoneEditedChanges"}, "EditedChanges"},
		{[]string{"IssueState", "PullRequestState"}, "State"},
		{[]string{"AThing", "BOther"}, ""},
		{[]string{"HTMLURL", "IssueHTMLURL"}, "HTMLURL"},
	}
	for _, tc := range suffixes {
		if got := commonSuffix(tc.in); got != tc.want {
			t.Errorf("commonSuffix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"See [the docs](https://docs.github.com/x).", "See the docs."},
		{"A GitHub App must have access.", "A forge App must have access."},
		{"Activity on GitHub.", "Activity on the forge."},
		{"GitHub recommends it.", "The forge recommends it."},
		{"A GitHub-reviewed advisory.", "A forge-reviewed advisory."},
		{"Sent to github.com users.", "Sent to the forge users."},
		{"See https://github.com/octo/repo for it.", "See the forge for it."},
		{"The X-GitHub-Event header.", "The X-Forge-Event header."},
		{"  trimmed \n", "trimmed"},
		{"Plain.", "Plain."},
		{"Intro.\n\n> [!NOTE]\n> Two lines\n> of a note.\n\nAfter.", "Intro.\n\nNote: Two lines of a note.\n\nAfter."},
		{"> [!WARNING]\n> Careful.", "Warning: Careful."},
		{"> [!TIP]", "Tip:"},
		{"> A plain quote stays.", "> A plain quote stays."},
		{"> [!UNKNOWN]\n> stays", "> [!UNKNOWN]\n> stays"},
	}
	for _, tc := range tests {
		if got := cleanText(tc.in); got != tc.want {
			t.Errorf("cleanText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Example_importSpec imports a spec of one webhook and prints what the schema says.
func Example_importSpec() {
	spec := []byte(`{
	  "webhooks": {"star-created": {"post": {
	    "operationId": "star/created",
	    "x-github": {"subcategory": "star"},
	    "requestBody": {"content": {"application/json": {"schema": {
	      "type": "object",
	      "properties": {
	        "action": {"type": "string", "enum": ["created"]},
	        "starred_at": {"type": ["string", "null"], "format": "date-time"},
	        "sender": {"title": "User", "type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}
	      },
	      "required": ["action", "starred_at", "sender"]
	    }}}}
	  }}},
	  "components": {"schemas": {}}
	}`)
	res, err := importSpec(spec, nil, &overrides{}, nil, func(string, ...any) {})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range res.schema.Events {
		for _, a := range e.Actions {
			fmt.Printf("%s.%s: %s\n", e.Name, a.Name, a.Type)
		}
	}
	for _, t := range res.schema.Types {
		for _, f := range t.Fields {
			fmt.Printf("%s.%s %s required=%v nullable=%v\n", t.Name, f.JSON, f.Type, f.Required, f.Nullable)
		}
	}
	// Output:
	// star.created: StarCreatedEvent
	// StarCreatedEvent.action string required=true nullable=false
	// StarCreatedEvent.starred_at timestamp required=true nullable=true
	// StarCreatedEvent.sender User required=true nullable=false
	// User.login string required=true nullable=false
}

// TestRequiredVotes checks how the copies of one type decide what it requires: a
// member is required when every copy has it and every copy with a "required" list
// requires it; a copy with no list at all does not vote.
func TestRequiredVotes(t *testing.T) {
	user := func(req string) string {
		return `{"title":"User","type":"object","properties":{"login":{"type":"string"},"id":{"type":"integer"},"x":{"type":"string"}}` + req + `}`
	}
	tests := []struct {
		name   string
		copies []string
		want   string // the required members of User
	}{
		{"all require", []string{user(`,"required":["login","id"]`), user(`,"required":["login","id"]`)}, "login id"},
		{"a copy requires less", []string{user(`,"required":["login","id"]`), user(`,"required":["id"]`)}, "id"},
		{"a copy without a list", []string{user(`,"required":["login","id"]`), user("")}, "login id"},
		{"an empty list votes", []string{user(`,"required":["login"]`), user(`,"required":[]`)}, ""},
		{"no copy has a list", []string{user(""), user("")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hooks []hookSpec
			for i, c := range tc.copies {
				ev := fmt.Sprintf("e%d", i)
				hooks = append(hooks, hookSpec{ev, ev, ev + "/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]},"u":` + c + `}}`})
			}
			s, _ := importTest(t, testSpec(hooks, nil))
			var got []string
			for _, f := range typeOf(s, "User").Fields {
				if f.Required {
					got = append(got, f.JSON)
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("required %q, want %q", got, tc.want)
			}
		})
	}
}
