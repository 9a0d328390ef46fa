package importschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// render writes a jnode back as JSON.
func render(b *bytes.Buffer, n *jnode) {
	switch n.kind {
	case jNull:
		b.WriteString("null")
	case jBool:
		if n.bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case jNumber:
		b.WriteString(n.str)
	case jString:
		s, _ := json.Marshal(n.str)
		b.Write(s)
	case jArray:
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			render(b, e)
		}
		b.WriteByte(']')
	case jObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteByte(':')
			render(b, n.vals[i])
		}
		b.WriteByte('}')
	}
}

// FuzzParseJSON checks the order-keeping reader against encoding/json: it accepts
// what is valid (nesting limit aside) and reads the same values.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x",1.5e3]}`, `[]`, `"\u00e9"`, `{"a":{"a":{}}}`, `{`, `1 2`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseJSON(data)
		if err != nil {
			if json.Valid(data) && !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("valid JSON %q rejected: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted", data)
		}
		var b bytes.Buffer
		render(&b, n)
		// Numbers as their text: a valid number may not fit a float64.
		want, err := decodeNumbers(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeNumbers(b.Bytes())
		if err != nil {
			t.Fatalf("rendered %q: %v", b.Bytes(), err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("read %q as %q", data, b.Bytes())
		}
	})
}

// decodeNumbers decodes a JSON document with its numbers as json.Number.
func decodeNumbers(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzImportSpec feeds the importer arbitrary documents: it returns a schema or an
// error, never panics, and a schema it returns is valid.
func FuzzImportSpec(f *testing.F) {
	if b, err := os.ReadFile(fixtureDir + "/spec.json"); err == nil {
		f.Add(b)
	}
	f.Add(testSpec([]hookSpec{{"a", "a", "a/x", `{"type":"object","properties":{"action":{"type":"string","enum":["x"]},` +
		`"u":{"oneOf":[{"type":"string"},{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]}]}}}`}}, nil))
	f.Add(testSpec([]hookSpec{{"a", "a", "a/x", `{"$ref":"#/components/schemas/r"}`}},
		map[string]string{"r": `{"type":"object","properties":{"self":{"$ref":"#/components/schemas/r"}}}`}))
	f.Add([]byte(`{"webhooks":{"a":{"post":{}}},"components":{"schemas":{}}}`))
	f.Add(testSpec([]hookSpec{{"a", "a", "a/x", `{"$ref":"#/components/schemas/r"}`}},
		map[string]string{"r": `{"allOf":[{"$ref":"#/components/schemas/r"},{"type":"object"}]}`}))
	values := make([]string, maxEnumValues+1)
	for i := range values {
		values[i] = strconv.Quote("v" + strconv.Itoa(i))
	}
	f.Add(testSpec([]hookSpec{{"a", "a", "a/x", `{"type":"object","properties":{"e":{"type":"string","enum":[` +
		strings.Join(values, ",") + `]}}}`}}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := importSpec(data, nil, &overrides{}, nil, func(string, ...any) {})
		if err != nil {
			return
		}
		if err := genmodel.Check(res.schema); err != nil {
			t.Fatalf("the import of %q is not a valid schema: %v", data, err)
		}
	})
}

var nameRE = regexp.MustCompile(`^[a-z0-9_]+(\.[^\s]+)?$`)

func FuzzContractNames(f *testing.F) {
	f.Add("### Supported events and their actions\n| `a` | `x`, `y` |\n| `b` | |\n")
	f.Add("| `a` | `x` |")
	f.Fuzz(func(t *testing.T, md string) {
		names, err := contractNames(md)
		if err != nil {
			return
		}
		for _, n := range names {
			if !nameRE.MatchString(n) {
				t.Fatalf("name %q from %q", n, md)
			}
		}
	})
}

func FuzzParseOverrides(f *testing.F) {
	if b, err := os.ReadFile(fixtureDir + "/overrides.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("names: [{name: a.b, like: a.c, reason: r}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := parseOverrides(data)
		if err != nil {
			return
		}
		_, _ = o.apply(smallSchema(), map[string]bool{})
	})
}

func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"A GitHub App [docs](https://docs.github.com/x).", "GitHub", "x-github-event", "[a](b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := cleanText(s)
		if strings.Contains(out, "GitHub") {
			t.Fatalf("cleanText(%q) = %q keeps the brand", s, out)
		}
	})
}

// BenchmarkImport imports the committed spec (about 4.8 MB of JSON), as make
// generate does: the figure to watch is the time per import.
func BenchmarkImport(b *testing.B) {
	rec, err := readRecord("../../schema/source/" + recordName)
	if err != nil {
		b.Fatal(err)
	}
	data, err := readSpec("../../schema/source/api.github.com.json.gz", rec)
	if err != nil {
		b.Fatal(err)
	}
	ov, err := readOverrides("../../schema/overrides.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := importSpec(data, rec, ov, nil, func(string, ...any) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseLock: any text either is refused or reads into a lock that encodes and
// reads back to the same text; never a panic.
func FuzzParseLock(f *testing.F) {
	if b, err := os.ReadFile(fixtureDir + "/want/" + LockFile); err == nil {
		f.Add(b)
	}
	f.Add([]byte("types:\n  - name: A\n    kind: struct\n    site: a.b\n    pointers: [x]\n"))
	f.Add([]byte("types:\n  - name: A\n   kind: enum\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parseLock("lock.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "lock.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		enc, err := l.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseLock("lock.yaml", enc)
		if err != nil {
			t.Fatalf("the encoded lock does not read: %v\n%s", err, enc)
		}
		again, _ := back.encode()
		if !bytes.Equal(enc, again) {
			t.Fatalf("round trip changed the lock:\n%s\n---\n%s", enc, again)
		}
	})
}

// FuzzYAMLError: the line a syntax error is placed at is within the text.
func FuzzYAMLError(f *testing.F) {
	for _, s := range []string{"a:\n  - x: 1\n   y: 2\n", "a: [1, 2\nb: 3\n", "a:\n\tb: 1\n", "a: \"x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var v any
		err := yaml.Unmarshal([]byte(text), &v)
		if err == nil {
			return
		}
		msg := yamlError("f.yaml", []byte(text), err).Error()
		rest, ok := strings.CutPrefix(msg, "f.yaml:")
		if !ok {
			t.Fatalf("no file name: %q", msg)
		}
		if n, _, ok := strings.Cut(rest, ":"); ok {
			if line, err := strconv.Atoi(n); err == nil && (line < 1 || line > strings.Count(text, "\n")+1) {
				t.Fatalf("line %d of a %d-line text: %q", line, strings.Count(text, "\n")+1, msg)
			}
		}
	})
}

// graphSpec builds a small spec from fuzzed bytes: four components, each
// shaped by one byte (an object, an allOf of one or two parts, a oneOf, an
// anyOf, an array, an enum, a bare $ref) whose parts refer to components the
// next bytes choose, so that references form any graph, cycles through allOf
// included; name is a member key and an enum value.
func graphSpec(shape []byte, name string) []byte {
	const n = 4
	at := func(i int) int {
		if i < len(shape) {
			return int(shape[i])
		}
		return 0
	}
	ref := func(i int) string { return fmt.Sprintf(`{"$ref":"#/components/schemas/c%d"}`, at(i)%n) }
	q, _ := json.Marshal(name)
	comps := make(map[string]string, n)
	for c := range n {
		b := c * 3
		var s string
		switch at(b) % 9 {
		case 0:
			s = fmt.Sprintf(`{"type":"object","properties":{%s:{"type":"string"},"p":%s},"required":["p"]}`, q, ref(b+1))
		case 1:
			s = fmt.Sprintf(`{"allOf":[%s,%s]}`, ref(b+1), ref(b+2))
		case 2:
			s = fmt.Sprintf(`{"allOf":[%s]}`, ref(b+1))
		case 3:
			s = fmt.Sprintf(`{"oneOf":[%s,{"type":"string"}]}`, ref(b+1))
		case 4:
			s = fmt.Sprintf(`{"anyOf":[%s,%s]}`, ref(b+1), ref(b+2))
		case 5:
			s = fmt.Sprintf(`{"type":"array","items":%s}`, ref(b+1))
		case 6:
			s = fmt.Sprintf(`{"type":"string","enum":[%s,"x"]}`, q)
		case 7:
			s = ref(b + 1)
		default:
			s = fmt.Sprintf(`{"allOf":[%s],"properties":{%s:%s}}`, ref(b+1), q, ref(b+2))
		}
		comps[fmt.Sprintf("c%d", c)] = s
	}
	return testSpec([]hookSpec{{"e-a", "e", "e/a", `{"type":"object","properties":{"action":{"type":"string","enum":["a"]},` +
		`"body":{"$ref":"#/components/schemas/c0"}},"required":["action","body"]}`}}, comps)
}

// FuzzImportGraph imports small specs whose components refer to each other
// in any pattern (self-referential allOf, cycles through oneOf and arrays,
// shared parts) with a fuzzed name in member keys and enum values: the
// import ends within a bound with an error or a schema that the model
// accepts both in memory and as the YAML it writes.
func FuzzImportGraph(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 0, 6, 0, 0, 5, 3, 0}, "name")
	f.Add([]byte{2, 0, 0}, "x")                            // c0: allOf [c0]
	f.Add([]byte{1, 1, 2, 1, 0, 3, 8, 1, 2, 0, 0, 0}, "k") // allOf through c1 back to c0
	f.Add([]byte{8, 0, 0, 7, 2, 0, 7, 1, 0, 0, 0, 0}, "m") // properties with allOf of itself; $ref loop
	f.Add([]byte{0, 0, 0, 3, 1, 0, 4, 1, 3, 5, 2, 0}, "a\x00b")
	f.Add([]byte{6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "\ufeff")
	f.Add([]byte{0, 1, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0}, "\xff")
	f.Fuzz(func(t *testing.T, shape []byte, name string) {
		spec := graphSpec(shape, name)
		start := time.Now()
		res, err := importSpec(spec, nil, &overrides{}, nil, func(string, ...any) {})
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("the import of %s took %v", spec, d)
		}
		if err != nil {
			if !errors.Is(err, errSpec) {
				t.Fatalf("the import of %s: %v, want an errSpec", spec, err)
			}
			return
		}
		if err := genmodel.Check(res.schema); err != nil {
			t.Fatalf("the import of %s is not a valid schema: %v", spec, err)
		}
		events, types, err := encodeSchema(res.schema, "# fuzz\n")
		if err != nil {
			t.Fatalf("encoding the import of %s: %v", spec, err)
		}
		if _, err := genmodel.Parse("fuzz", events, types, nil); err != nil {
			t.Fatalf("the YAML written for %s does not parse: %v", spec, err)
		}
	})
}

// FuzzCheckName: the importer refuses exactly the names the model would
// refuse as a member's JSON key, so that a spec's name fails at import with
// the spec's place, never later in the model's check or in generation.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"node_id", "a\x00b", "\ufeffid", "\xff", "\u0085", "\u00a0", "\x7f", "中", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return
		}
		err := checkName("member name", "#x", name)
		if err != nil && (!errors.Is(err, errSpec) || !strings.Contains(err.Error(), "#x")) {
			t.Fatalf("checkName(%q) = %v, want an errSpec with the place", name, err)
		}
		s := &genmodel.Schema{
			Events: []genmodel.Event{{Name: "e", Type: "A"}},
			Types:  []genmodel.Type{{Name: "A", Kind: genmodel.KindStruct, Fields: []genmodel.Field{{JSON: name, Name: "X", Type: "string"}}}},
		}
		if modelErr := genmodel.Check(s); (err == nil) != (modelErr == nil) {
			t.Fatalf("checkName(%q) = %v, but the model's check says %v", name, err, modelErr)
		}
	})
}
