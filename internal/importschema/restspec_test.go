package importschema

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustJSON(t *testing.T, s string) *jnode {
	t.Helper()
	n, err := parseJSON([]byte(s))
	if err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return n
}

func TestTo31(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"typed", `{"type":"string","nullable":true}`, `{"type":["string","null"]}`},
		{"not nullable", `{"type":"string","nullable":false}`, `{"type":"string"}`},
		{"enum", `{"type":"string","enum":["a"],"nullable":true}`, `{"type":["string","null"],"enum":["a"]}`},
		{"oneOf", `{"oneOf":[{"$ref":"#/components/schemas/a"}],"nullable":true}`, `{"oneOf":[{"$ref":"#/components/schemas/a"}],"type":["null"]}`},
		{"bare", `{"nullable":true}`, `{"type":["null"]}`},
		{"nested", `{"type":"object","properties":{"a":{"type":"integer","nullable":true}}}`, `{"type":"object","properties":{"a":{"type":["integer","null"]}}}`},
		{"property named nullable", `{"type":"object","properties":{"nullable":{"type":"boolean"}}}`, `{"type":"object","properties":{"nullable":{"type":"boolean"}}}`},
		{"array", `[{"nullable":true,"type":"number"}]`, `[{"type":["number","null"]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := mustJSON(t, tc.in)
			before := string(encodeJSON(in))
			if got := string(encodeJSON(to31(in))); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if after := string(encodeJSON(in)); after != before {
				t.Errorf("to31 changed its input: %s", after)
			}
		})
	}
}

func TestEncodeJSONRoundTrip(t *testing.T) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x<&>\u2028"],"c":{"d":-1.5e3}}`,
		`"\"\\\n"`,
		`[]`,
	} {
		n := mustJSON(t, s)
		back := mustJSON(t, string(encodeJSON(n)))
		if !sameJSON(n, back) {
			t.Errorf("%s: round trip gives %s", s, encodeJSON(back))
		}
	}
	// Member order is the document's, not sorted.
	if got := string(encodeJSON(mustJSON(t, `{"z":1,"a":2}`))); got != `{"z":1,"a":2}` {
		t.Errorf("got %s", got)
	}
}

// restDoc is a REST description in the 3.0 dialect with one webhook.
const restDoc = `{
 "openapi": "3.0.3",
 "info": {"title": "rest", "version": "1"},
 "paths": {"/x": {"get": {"responses": {"200": {"$ref": "#/components/responses/r"}}}}},
 "x-webhooks": {
  "thing-made": {"post": {
   "operationId": "thing/made",
   "requestBody": {"content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/webhook-thing-made"},
    "examples": {"default": {"$ref": "#/components/examples/thing-made"}}}}},
   "x-github": {"subcategory": "thing"}}}
 },
 "components": {
  "schemas": {
   "unused": {"type": "object", "properties": {"a": {"type": "string"}}},
   "webhook-thing-made": {"type": "object", "required": ["action", "thing"], "properties": {
    "action": {"type": "string", "enum": ["made"]},
    "thing": {"$ref": "#/components/schemas/thing"},
    "user": {"$ref": "#/components/schemas/user"}}},
   "thing": {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string", "nullable": true}}},
   "user": {"type": "object", "properties": {"login": {"type": "string"}, "name": {"type": "string", "nullable": true}}}
  },
  "examples": {"thing-made": {"value": {"action": "made"}}, "other": {"value": {}}},
  "responses": {"r": {"description": "ok"}}
 }
}`

func TestRestPrune(t *testing.T) {
	out, err := restPrune(mustJSON(t, restDoc))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.keys; !reflect.DeepEqual(got, []string{"openapi", "info", "x-webhooks", "components"}) {
		t.Errorf("members %v", got)
	}
	if got := out.path("components", "schemas").keys; !reflect.DeepEqual(got, []string{"webhook-thing-made", "thing", "user"}) {
		t.Errorf("schemas %v, want the three the webhook reaches, in the description's order", got)
	}
	if got := out.path("components", "examples").keys; !reflect.DeepEqual(got, []string{"thing-made"}) {
		t.Errorf("examples %v", got)
	}
	// The pruned copy is kept as published: still 3.0.
	if !out.path("components", "schemas", "user", "properties", "name").has("nullable") {
		t.Error("pruning converted the dialect")
	}

	for _, tc := range []struct{ name, doc, want string }{
		{"no webhooks", `{"components":{"schemas":{}}}`, "no x-webhooks"},
		{"missing component", `{"x-webhooks":{"a":{"$ref":"#/components/schemas/gone"}},"components":{"schemas":{}}}`, `missing component "schemas/gone"`},
		{"foreign ref", `{"x-webhooks":{"a":{"$ref":"other.json#/x"}},"components":{"schemas":{}}}`, "not a component schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := restPrune(mustJSON(t, tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, errSpec) {
				t.Errorf("got %v, want errSpec containing %q", err, tc.want)
			}
		})
	}
}

// baseDoc is a first-source spec (3.1) with one webhook and a user of another
// shape than restDoc's.
const baseDoc = `{
 "openapi": "3.1.0",
 "webhooks": {
  "thing-kept": {"post": {"operationId": "thing/kept",
   "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/webhook-thing-kept"}}}},
   "x-github": {"subcategory": "thing"}}}
 },
 "components": {"schemas": {
  "webhook-thing-kept": {"type": "object", "properties": {"action": {"type": "string", "enum": ["kept"]}, "user": {"$ref": "#/components/schemas/user"}}},
  "user": {"type": "object", "properties": {"login": {"type": "string"}}}
 }}
}`

func TestMergeRest(t *testing.T) {
	rest, err := restPrune(mustJSON(t, restDoc))
	if err != nil {
		t.Fatal(err)
	}
	base := mustJSON(t, baseDoc)
	keptBefore := string(encodeJSON(base.path("webhooks", "thing-kept")))
	merged, added, err := mergeRest(base, []namedSpec{{"ghec", rest}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []restAdded{{"thing-made", "ghec"}}; !reflect.DeepEqual(added, want) {
		t.Errorf("added %v, want %v", added, want)
	}
	if got := merged.get("webhooks").keys; !reflect.DeepEqual(got, []string{"thing-kept", "thing-made"}) {
		t.Errorf("webhooks %v", got)
	}
	if got := string(encodeJSON(merged.path("webhooks", "thing-kept"))); got != keptBefore {
		t.Errorf("the first source's webhook changed: %s", got)
	}
	schemas := merged.path("components", "schemas")
	if got := schemas.keys; !reflect.DeepEqual(got, []string{"webhook-thing-kept", "user", "thing", "user-rest-ghec", "webhook-thing-made"}) {
		t.Errorf("schemas %v", got)
	}
	if got := string(encodeJSON(schemas.get("user"))); got != `{"type":"object","properties":{"login":{"type":"string"}}}` {
		t.Errorf("the first source's user changed: %s", got)
	}
	if got := schemas.path("webhook-thing-made", "properties", "user").text("$ref"); got != "#/components/schemas/user-rest-ghec" {
		t.Errorf("the added webhook's user is %q", got)
	}
	if got := string(encodeJSON(schemas.path("thing", "properties", "note"))); got != `{"type":["string","null"]}` {
		t.Errorf("an added component is not in the 3.1 dialect: %s", got)
	}
	if merged.path("webhooks", "thing-made", "post", "requestBody", "content", "application/json").has("examples") {
		t.Error("the added webhook still names component examples")
	}

	// A filter that refuses the key adds nothing; a webhook the base has is never
	// replaced.
	base2 := mustJSON(t, baseDoc)
	_, added, err = mergeRest(base2, []namedSpec{{"ghec", rest}}, func(v, k string) bool { return false })
	if err != nil || len(added) != 0 {
		t.Errorf("with a filter: added %v, %v", added, err)
	}
}

func TestRestVariantOrder(t *testing.T) {
	got := restVariantOrder([]string{"ghes-3.9", "ghes-3.17", "api.github.com", "ghes-3.19", "ghec"})
	want := []string{"api.github.com", "ghec", "ghes-3.19", "ghes-3.17", "ghes-3.9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWithRest(t *testing.T) {
	rest, err := restPrune(mustJSON(t, restDoc))
	if err != nil {
		t.Fatal(err)
	}
	restData := encodeJSON(rest)
	emptyRest := `{"x-webhooks":{},"components":{"schemas":{}}}`

	// The webhook only a server variant of the second source has joins the main
	// spec; the main variant, as it is, becomes a variant to mark against.
	main, vs, took, err := withRest([]byte(baseDoc), map[string][]byte{"ghes-3.19": []byte(baseDoc), "ghes-3.14": []byte(baseDoc)},
		map[string][]byte{mainVariant: []byte(emptyRest), "ghes-3.19": restData})
	if err != nil {
		t.Fatal(err)
	}
	if want := []restWebhook{{"thing-made", "ghes-3.19"}}; !reflect.DeepEqual(took, want) {
		t.Errorf("took %v, want %v", took, want)
	}
	if !mustJSON(t, string(main)).get("webhooks").has("thing-made") {
		t.Error("the main spec lacks the added webhook")
	}
	if got := sortedKeys(vs); !reflect.DeepEqual(got, []string{mainVariant, "ghes-3.14", "ghes-3.19"}) {
		t.Fatalf("variants %v", got)
	}
	for name, want := range map[string]bool{mainVariant: false, "ghes-3.14": false, "ghes-3.19": true} {
		if got := mustJSON(t, string(vs[name])).get("webhooks").has("thing-made"); got != want {
			t.Errorf("variant %s has the webhook: %v, want %v", name, got, want)
		}
	}

	// A webhook the main variant of the second source has: no variant is added.
	_, vs, took, err = withRest([]byte(baseDoc), nil, map[string][]byte{mainVariant: restData})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 0 || len(took) != 1 || took[0].Variant != mainVariant {
		t.Errorf("variants %v, took %v", sortedKeys(vs), took)
	}

	// No second source: the input as it is.
	m, v, took, err := withRest([]byte(baseDoc), nil, nil)
	if err != nil || string(m) != baseDoc || v != nil || took != nil {
		t.Errorf("without a second source: %v %v %v", v, took, err)
	}
}

// TestImportWithRest imports the fixture spec joined with a second source whose
// server variant alone has an event: the event is typed, and not sent by the
// main variant or by the variant without it.
func TestImportWithRest(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join("testdata", "fixture", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := restPrune(mustJSON(t, restDoc))
	if err != nil {
		t.Fatal(err)
	}
	main, vs, _, err := withRest(spec, map[string][]byte{"ghes-3.19": spec, "ghes-3.14": spec},
		map[string][]byte{"ghes-3.19": encodeJSON(rest)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := importAll(main, vs, nil, &overrides{}, nil, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range res.schema.Events {
		if e.Name != "thing" {
			continue
		}
		found = true
		if !reflect.DeepEqual(e.NotSentBy, []string{mainVariant, "ghes-3.14"}) {
			t.Errorf("thing not_sent_by %v", e.NotSentBy)
		}
		if len(e.Actions) != 1 || e.Actions[0].Name != "made" || e.Actions[0].Type == "" {
			t.Errorf("thing's actions %+v", e.Actions)
		}
	}
	if !found {
		t.Error("the second source's event is not in the schema")
	}
	if got := res.schema.Source.Variants; !reflect.DeepEqual(got, []string{mainVariant, "ghes-3.14", "ghes-3.19"}) {
		t.Errorf("variants %v", got)
	}
}

func TestFetchRest(t *testing.T) {
	saved := npmPack
	defer func() { npmPack = saved }()
	tgz := writeTgz(t, map[string]string{
		"package/package.json":                         `{"name":"@octokit/openapi","version":"23.0.2"}`,
		"package/generated/api.github.com.json":        restDoc,
		"package/generated/api.github.com.deref.json":  `{"not":"read"}`,
		"package/generated/ghes-3.19.json":             restDoc,
		"package/generated/without-webhooks.json":      `{"openapi":"3.0.3","paths":{}}`,
		"package/generated/nested/api.github.com.json": `not json`,
	})
	npmPack = func(pkg, version, dir string) (string, error) {
		if pkg != restPackage {
			t.Errorf("npm pack %s", pkg)
		}
		p := filepath.Join(dir, "p.tgz")
		return p, os.WriteFile(p, tgz, 0o644)
	}
	rec, specs, err := fetchRest("latest", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != "23.0.2" || rec.Package != restPackage || rec.TarballSHA256 != sha256Hex(tgz) {
		t.Errorf("record %+v", rec)
	}
	if got := sortedKeys(specs); !reflect.DeepEqual(got, []string{mainVariant, "ghes-3.19"}) {
		t.Errorf("specs %v", got)
	}
	for _, v := range rec.Variants {
		if v.SHA256 != sha256Hex(specs[v.Name]) || v.File != restFile(v.Name) {
			t.Errorf("variant %+v", v)
		}
	}
	if mustJSON(t, string(specs[mainVariant])).has("paths") {
		t.Error("the copy was not pruned")
	}

	// The committed copies read back, checked.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, restDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range specs {
		gz, _ := gzipBytes(data)
		if err := os.WriteFile(filepath.Join(dir, restDir, name+".json.gz"), gz, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	back, err := readRest(dir, rec)
	if err != nil || !reflect.DeepEqual(back, specs) {
		t.Errorf("readRest: %v", err)
	}
	bad := *rec
	bad.Variants = append([]variantRecord(nil), rec.Variants...)
	bad.Variants[0].SHA256 = strings.Repeat("0", 64)
	if _, err := readRest(dir, &bad); !errors.Is(err, errChecksum) {
		t.Errorf("a changed copy: %v, want errChecksum", err)
	}

	for _, tc := range []struct {
		name, version string
		old           *restRecord
		want          string
	}{
		{"other version", "23.0.1", nil, "says it is version 23.0.2"},
		{"changed tarball", "23.0.2", &restRecord{Version: "23.0.2", TarballSHA256: strings.Repeat("0", 64)}, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := fetchRest(tc.version, tc.old); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDiscriminateOptionalTag(t *testing.T) {
	// Three objects of the same members, told apart only by an optional one-value
	// "type": matched by its value. Without the tag they stay an error.
	spec := func(tagged bool) string {
		v := func(tag string) string {
			props := `"data":{"type":"array","items":{"type":"string"}}`
			if tagged {
				props = `"type":{"type":"string","enum":["` + tag + `"]},` + props
			}
			return `{"type":"object","properties":{` + props + `}}`
		}
		return `{"webhooks":{"a-made":{"post":{"operationId":"a/made",
		  "requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/p"}}}},
		  "x-github":{"subcategory":"a"}}}},
		 "components":{"schemas":{"p":{"type":"object","required":["action"],"properties":{
		  "action":{"type":"string","enum":["made"]},
		  "data":{"oneOf":[` + v("one") + `,` + v("two") + `,` + v("three") + `]}}}}}}`
	}
	res, err := importSpec([]byte(spec(true)), nil, &overrides{}, nil, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	var equals []string
	for _, ty := range res.schema.Types {
		for _, v := range ty.Variants {
			for k, val := range v.Match.Equals {
				equals = append(equals, k+"="+val)
			}
		}
	}
	if want := []string{"type=one", "type=two", "type=three"}; !reflect.DeepEqual(equals, want) {
		t.Errorf("matches %v, want %v", equals, want)
	}
	if _, err := importSpec([]byte(spec(false)), nil, &overrides{}, nil, func(string, ...any) {}); err == nil || !strings.Contains(err.Error(), "no key of their own") {
		t.Errorf("untagged: %v", err)
	}
	// An overrides entry keeps the untagged union as a free-form object.
	ov := &overrides{FreeForm: []freeFormOverride{{At: "webhook a-made.data", Reason: "test"}}}
	if _, err := importSpec([]byte(spec(false)), nil, ov, nil, func(string, ...any) {}); err != nil {
		t.Errorf("free_form: %v", err)
	}
}
