package importschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/corpus"
)

// timestampLayouts are the forms of date-time text the forge sends (besides Unix
// seconds as a JSON integer). The generator's Timestamp must accept the same.
var timestampLayouts = []string{
	time.RFC3339Nano,            // 2019-05-15T15:20:30Z, 2019-05-15T15:20:30.123+02:00
	"2006-01-02T15:04:05Z0700",  // 2019-05-15T15:20:30+0200
	"2006-01-02 15:04:05 -0700", // 2019-05-15 15:20:30 -0500
	"2006-01-02 15:04:05 MST",   // 2019-05-15 15:20:30 UTC
	"2006-01-02 15:04:05",       // 2018-04-25 20:42:10 (no zone: UTC)
}

func parseTimestamp(s string) bool {
	for _, l := range timestampLayouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// validator checks JSON documents against a schema, the way the generated decoders
// will read them.
type validator struct {
	types    map[string]*genmodel.Type
	problems []string
	unknown  map[string]int // "Type.key" of members the schema does not know
	matched  map[string]int // union variants chosen, "Union→Type"
}

func newValidator(s *genmodel.Schema) *validator {
	v := &validator{types: map[string]*genmodel.Type{}, unknown: map[string]int{}, matched: map[string]int{}}
	for i := range s.Types {
		v.types[s.Types[i].Name] = &s.Types[i]
	}
	return v
}

func (v *validator) fail(path, format string, args ...any) {
	v.problems = append(v.problems, path+": "+fmt.Sprintf(format, args...))
}

// decodeJSON decodes with numbers kept as text, so that integers can be told
// from other numbers.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	err := dec.Decode(&x)
	return x, err
}

func jsonKind(x any) string {
	switch x := x.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case nil:
		return "null"
	}
	return "?"
}

// holds reports whether a Match holds for a value.
func holds(m genmodel.Match, x any) bool {
	k := jsonKind(x)
	if m.JSON != "" && m.JSON != k && !(m.JSON == "number" && k == "integer") {
		return false
	}
	obj, _ := x.(map[string]any)
	if (len(m.Has) > 0 || len(m.Lacks) > 0 || len(m.Equals) > 0) && obj == nil {
		return false
	}
	for _, key := range m.Has {
		if _, ok := obj[key]; !ok {
			return false
		}
	}
	for _, key := range m.Lacks {
		if _, ok := obj[key]; ok {
			return false
		}
	}
	for key, want := range m.Equals {
		if got, ok := obj[key].(string); !ok || got != want {
			return false
		}
	}
	return true
}

func (v *validator) expr(path, expr string, x any) {
	e, err := genmodel.ParseTypeExpr(expr)
	if err != nil {
		v.fail(path, "%v", err)
		return
	}
	v.value(path, e, x)
}

func (v *validator) value(path string, e *genmodel.TypeExpr, x any) {
	k := jsonKind(x)
	switch e.Kind {
	case genmodel.ExprArray, genmodel.ExprMap:
		var elems []any
		var keys []string
		switch x := x.(type) {
		case []any:
			if e.Kind != genmodel.ExprArray {
				v.fail(path, "an array, want %s", e)
				return
			}
			elems = x
		case map[string]any:
			if e.Kind != genmodel.ExprMap {
				v.fail(path, "an object, want %s", e)
				return
			}
			for key := range x {
				keys = append(keys, key)
			}
			sort.Strings(keys)
			for _, key := range keys {
				elems = append(elems, x[key])
			}
		default:
			v.fail(path, "JSON %s, want %s", k, e)
			return
		}
		for i, el := range elems {
			p := fmt.Sprintf("%s[%d]", path, i)
			if keys != nil {
				p = fmt.Sprintf("%s[%q]", path, keys[i])
			}
			if el == nil {
				if !e.ElemNullable {
					v.fail(p, "null, but %s elements are not nullable", e)
				}
				continue
			}
			v.value(p, e.Elem, el)
		}
	case genmodel.ExprBuiltin:
		ok := true
		switch e.Name {
		case "string":
			ok = k == "string"
		case "bool":
			ok = k == "boolean"
		case "int64":
			ok = k == "integer"
		case "float64":
			ok = k == "integer" || k == "number"
		case "timestamp":
			switch k {
			case "integer":
			case "string":
				if !parseTimestamp(x.(string)) {
					v.fail(path, "timestamp %q does not parse", x)
				}
			default:
				ok = false
			}
		}
		if !ok {
			v.fail(path, "JSON %s %s, want %s", k, short(x), e.Name)
		}
	case genmodel.ExprNamed:
		t := v.types[e.Name]
		switch t.Kind {
		case genmodel.KindStruct:
			v.object(path, t, x)
		case genmodel.KindEnum:
			want := "string"
			if t.Base == "int64" {
				want = "integer"
			}
			if k != want {
				v.fail(path, "JSON %s %s, want enum %s", k, short(x), t.Name)
				return
			}
			s := fmt.Sprint(x)
			for _, val := range t.Values {
				if val.Value == s {
					return
				}
			}
			v.fail(path, "enum %s has no value %q", t.Name, s)
		case genmodel.KindUnion:
			var hits []int
			for i, vr := range t.Variants {
				if holds(vr.Match, x) {
					hits = append(hits, i)
				}
			}
			if len(hits) != 1 {
				v.fail(path, "%s %s matches %d variants of union %s, want exactly one", k, short(x), len(hits), t.Name)
				return
			}
			vr := t.Variants[hits[0]]
			v.matched[t.Name+"→"+vr.Type]++
			v.expr(path, vr.Type, x)
		}
	}
}

func (v *validator) object(path string, t *genmodel.Type, x any) {
	obj, ok := x.(map[string]any)
	if !ok {
		v.fail(path, "JSON %s %s, want struct %s", jsonKind(x), short(x), t.Name)
		return
	}
	known := map[string]bool{}
	for _, f := range t.Fields {
		known[f.JSON] = true
		val, present := obj[f.JSON]
		p := path + "." + f.JSON
		switch {
		case !present:
			if f.Required {
				v.fail(p, "required member of %s missing", t.Name)
			}
		case val == nil:
			if !f.Nullable {
				v.fail(p, "null, but %s.%s is not nullable", t.Name, f.JSON)
			}
		default:
			v.expr(p, f.Type, val)
		}
	}
	for key := range obj {
		if !known[key] {
			v.unknown[t.Name+"."+key]++
		}
	}
}

func short(x any) string {
	b, _ := json.Marshal(x)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// payloadType returns the type of an example's event.action.
func payloadType(s *genmodel.Schema, ex corpus.Example) (string, error) {
	for _, e := range s.Events {
		if e.Name != ex.Event {
			continue
		}
		if len(e.Actions) == 0 {
			if ex.Action != "" {
				return "", fmt.Errorf("event %s has no actions, the payload has action %q", e.Name, ex.Action)
			}
			return e.Type, nil
		}
		for _, a := range e.Actions {
			if a.Name == ex.Action {
				return a.Type, nil
			}
		}
		if e.OtherActionsType != "" && ex.Action != "" {
			return e.OtherActionsType, nil
		}
		return "", fmt.Errorf("event %s has no action %q", e.Name, ex.Action)
	}
	return "", fmt.Errorf("no event %s", ex.Event)
}

// TestSchemaMatchesCorpus validates every public example payload against the
// committed schema: required members present, non-nullable members not null, JSON
// kinds as the types say, every union value matching exactly one variant,
// timestamps that parse, enum values known. Members the schema does not know are
// counted and listed (the generator keeps them raw).
func TestSchemaMatchesCorpus(t *testing.T) {
	s, err := genmodel.Load("../../schema")
	if err != nil {
		t.Fatal(err)
	}
	examples := corpus.Public()
	if len(examples) != 329 {
		t.Errorf("corpus.Public() has %d examples, want 329", len(examples))
	}
	v := newValidator(s)
	names := map[string]bool{}
	for _, ex := range examples {
		typ, err := payloadType(s, ex)
		if err != nil {
			t.Errorf("%s: %v", ex.Path, err)
			continue
		}
		names[ex.Name()] = true
		x, err := decodeJSON(ex.Body)
		if err != nil {
			t.Errorf("%s: %v", ex.Path, err)
			continue
		}
		v.object(ex.Path+":"+typ, v.types[typ], x)
	}
	const maxShown = 1000
	for i, p := range v.problems {
		if i == maxShown {
			t.Errorf("... and %d more problems", len(v.problems)-maxShown)
			break
		}
		t.Error(p)
	}
	var unknown []string
	total := 0
	for k, n := range v.unknown {
		unknown = append(unknown, fmt.Sprintf("%s (%d)", k, n))
		total += n
	}
	sort.Strings(unknown)
	t.Logf("%d examples of %d names validated; %d problems", len(examples), len(names), len(v.problems))
	t.Logf("%d members the schema does not know, %d occurrences (kept raw by the generator): %s",
		len(unknown), total, strings.Join(unknown, ", "))
	var unions []string
	for k, n := range v.matched {
		unions = append(unions, fmt.Sprintf("%s (%d)", k, n))
	}
	sort.Strings(unions)
	t.Logf("union variants chosen: %s", strings.Join(unions, ", "))
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"2019-05-15T15:20:30Z", true},
		{"2019-05-15T15:20:30.123456Z", true},
		{"2019-05-15T15:20:30-05:00", true},
		{"2019-05-15T15:20:30+0200", true},
		{"2019-05-15 15:20:30 -0500", true},
		{"2019-05-15 15:20:30 UTC", true},
		{"2018-04-25 20:42:10", true},
		{"2019-05-15", false},
		{"yesterday", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := parseTimestamp(tc.in); got != tc.want {
			t.Errorf("parseTimestamp(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestValidator checks that the validator finds each kind of problem.
func TestValidator(t *testing.T) {
	s := &genmodel.Schema{Types: []genmodel.Type{
		{Name: "P", Kind: genmodel.KindStruct, Fields: []genmodel.Field{
			{JSON: "id", Type: "int64", Required: true},
			{JSON: "state", Type: "S"},
			{JSON: "at", Type: "timestamp", Nullable: true},
			{JSON: "who", Type: "U"},
			{JSON: "tags", Type: "[]*string"},
		}},
		{Name: "S", Kind: genmodel.KindEnum, Values: []genmodel.EnumValue{{Value: "open"}}},
		{Name: "U", Kind: genmodel.KindUnion, Variants: []genmodel.Variant{
			{Type: "string", Match: genmodel.Match{JSON: "string"}},
			{Type: "Q", Match: genmodel.Match{JSON: "object", Has: []string{"login"}}},
			{Type: "Q", Match: genmodel.Match{JSON: "object", Lacks: []string{"login"}}},
		}},
		{Name: "Q", Kind: genmodel.KindStruct},
	}}
	tests := []struct {
		name, doc, want string
	}{
		{"valid", `{"id":1,"state":"open","at":1700000000,"who":"x","tags":["a",null],"extra":1}`, ""},
		{"missing required", `{}`, "required member of P missing"},
		{"null not nullable", `{"id":null}`, "is not nullable"},
		{"wrong kind", `{"id":"1"}`, "JSON string"},
		{"not an integer", `{"id":1.5}`, "want int64"},
		{"unknown enum", `{"id":1,"state":"shut"}`, `no value "shut"`},
		{"bad timestamp", `{"id":1,"at":"soon"}`, "does not parse"},
		{"no variant", `{"id":1,"who":true}`, "matches 0 variants"},
		{"one variant by key", `{"id":1,"who":{"login":"x"}}`, ""},
		{"element null", `{"id":1,"tags":[null]}`, ""},
		{"element kind", `{"id":1,"tags":[1]}`, "want string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newValidator(s)
			x, err := decodeJSON([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			v.object("doc", v.types["P"], x)
			got := strings.Join(v.problems, "; ")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
		})
	}
	v := newValidator(s)
	x, _ := decodeJSON([]byte(`{"id":1,"extra":1,"more":2}`))
	v.object("doc", v.types["P"], x)
	if v.unknown["P.extra"] != 1 || v.unknown["P.more"] != 1 {
		t.Errorf("unknown members: %v", v.unknown)
	}
}
