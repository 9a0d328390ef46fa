package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The files of a schema directory, as Load reads them.
const (
	// EventsFile holds the source record and the events with their actions:
	// top-level keys "source" and "events".
	EventsFile = "events.yaml"
	// TypesFile holds the named payload types: top-level key "types".
	TypesFile = "types.yaml"
	// ContractFile lists, one per line, names ("event" or "event.action") that the
	// schema must contain. Optional: when it is absent there is no contract to check.
	// Blank lines and lines starting with "#" are ignored.
	ContractFile = "names-original.txt"
	// PackagesFile is the record of the generated package of every event and
	// named type (Packages). Load reads it when present; the generator's
	// explicit step (cmd/genpayloads -write-packages) writes it.
	PackagesFile = "packages.yaml"
)

// ErrInvalidSchema is the error every schema problem found by Load wraps.
var ErrInvalidSchema = errors.New("invalid schema")

// SchemaError lists every problem Load found in a schema directory. It unwraps to
// ErrInvalidSchema, so callers test for it with errors.Is.
type SchemaError struct {
	// Dir is the directory Load read.
	Dir string
	// Problems are the problems found, each naming the file and the place in it,
	// in the order the files list them.
	Problems []string
}

// Error lists every problem, one per line after a summary.
func (e *SchemaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %d problem", e.Dir, ErrInvalidSchema, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p)
	}
	return b.String()
}

// Unwrap returns ErrInvalidSchema.
func (e *SchemaError) Unwrap() error { return ErrInvalidSchema }

// Load reads the schema in dir and checks it, so that a generator can trust what it
// gets. It is the one way into a schema directory; the generator calls it.
//
// Contract. Load reads EventsFile (keys "source" and "events") and TypesFile (key
// "types") into one Schema; unknown YAML keys are errors. When ContractFile exists,
// every name it lists must be a name of the schema. Load returns an error wrapping
// ErrInvalidSchema (a *SchemaError listing every problem) unless all of these hold:
//
//   - events are sorted by name, names unique and made of [a-z0-9_];
//   - an event has either a Type (no actions) or Actions (sorted, unique, each with a
//     Type), never both; OtherActionsType is set only beside Actions;
//   - every type an event or action names exists and is a struct;
//   - types are sorted by name, names unique exported Go identifiers;
//   - a struct has unique, non-empty JSON keys, and every Field.Name given is an
//     exported Go identifier;
//   - an enum has a Base of "", "string" or "int64", at least one value, values
//     unique (and integers when Base is "int64");
//   - a union has at least two variants, each Match.JSON is a JSON kind, and a
//     Match with Has, Lacks or Equals is for objects;
//   - every type expression parses (see ParseTypeExpr) and every name in it is a type
//     of the schema;
//   - no name of ContractFile is missing.
//
// A file that cannot be read gives its error (errors.Is(err, fs.ErrNotExist) for a
// missing one), not ErrInvalidSchema. Every not_sent_by must name a variant of
// source.variants. When PackagesFile exists, Load reads it into Schema.Packages.
// The returned schema is exactly what the files say: Load never reorders or
// fills in anything.
func Load(dir string) (*Schema, error) {
	events, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("model.Load: %w", err)
	}
	types, err := os.ReadFile(filepath.Join(dir, TypesFile))
	if err != nil {
		return nil, fmt.Errorf("model.Load: %w", err)
	}
	contract, err := os.ReadFile(filepath.Join(dir, ContractFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model.Load: %w", err)
	}
	s, err := Parse(dir, events, types, contract)
	if err != nil {
		return nil, err
	}
	if s.Packages, err = loadPackages(dir); err != nil {
		return nil, fmt.Errorf("model.Load: %w", err)
	}
	return s, nil
}

// Parse reads a schema from the bytes of its files (EventsFile, TypesFile
// and, when not nil, ContractFile) and checks it as Load does: Load is Parse
// of a directory's files, and the importer checks what it is about to write
// with Parse, without writing it anywhere first. The error wraps
// ErrInvalidSchema (a *SchemaError whose Dir is name). Schema.Packages is
// empty: the record lives beside the files, not in them.
func Parse(name string, events, types, contract []byte) (*Schema, error) {
	s, problems := loadBytes(events, types, contract)
	if len(problems) > 0 {
		return nil, &SchemaError{Dir: name, Problems: problems}
	}
	return s, nil
}

// Check validates a schema that is already in memory as Load validates what it
// reads (every rule but the contract file's), so that a program that builds a
// schema, such as the importer, can check it before writing it. The error wraps
// ErrInvalidSchema (a *SchemaError with Dir "(memory)").
func Check(s *Schema) error {
	if problems := loadCheck(s, nil); len(problems) > 0 {
		return &SchemaError{Dir: "(memory)", Problems: problems}
	}
	return nil
}

// loadEventsDoc and loadTypesDoc are the shapes of the two YAML files.
type loadEventsDoc struct {
	Source Source  `yaml:"source"`
	Events []Event `yaml:"events"`
}

type loadTypesDoc struct {
	Types []Type `yaml:"types"`
}

// loadBytes decodes and checks the files' contents; contract may be nil. It is the
// whole of Load but the reading, so that tests and fuzzing need no files.
func loadBytes(events, types, contract []byte) (*Schema, []string) {
	var problems []string
	var ed loadEventsDoc
	if err := loadDecodeStrict(events, &ed); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", EventsFile, err))
	}
	var td loadTypesDoc
	if err := loadDecodeStrict(types, &td); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", TypesFile, err))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	s := &Schema{Source: ed.Source, Events: ed.Events, Types: td.Types}
	problems = loadCheck(s, contract)
	if len(problems) > 0 {
		return nil, problems
	}
	return s, nil
}

// loadDecodeStrict decodes one YAML document, rejecting unknown keys (a typo in a
// hand edit should fail loudly, not vanish).
func loadDecodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty file")
		}
		return err
	}
	return nil
}

var (
	loadEventNameRE  = regexp.MustCompile(`^[a-z0-9_]+$`)
	loadActionNameRE = regexp.MustCompile(`^[a-z0-9_.\-]+$`)
	loadGoNameRE     = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)
)

// loadJSONKinds are the values Match.JSON may take.
var loadJSONKinds = map[string]bool{
	"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true,
}

// loadCheck returns every problem of s, in file order: the types' names, each
// type's body, the events, then the contract.
func loadCheck(s *Schema, contract []byte) []string {
	c := &checker{kinds: make(map[string]Kind, len(s.Types)), variants: map[string]bool{}}
	for _, v := range s.Source.Variants {
		if c.variants[v] || v == "" {
			c.bad("%s: source variants: %q is empty or listed twice", EventsFile, v)
		}
		c.variants[v] = true
	}
	c.typeNames(s.Types)
	for i, t := range s.Types {
		where := fmt.Sprintf("%s: types[%d] %q", TypesFile, i, t.Name)
		switch t.Kind {
		case KindStruct:
			c.structType(where, t)
		case KindEnum:
			c.enumType(where, t)
		case KindUnion:
			c.unionType(where, t)
		default:
			c.bad("%s: kind %q is not struct, enum or union", where, t.Kind)
		}
	}
	c.events(s.Events)
	if contract != nil {
		c.contract(s, contract)
	}
	return c.problems
}

// checker collects the problems loadCheck finds.
type checker struct {
	problems []string
	// kinds maps every type name to its kind ("?" for a type without one).
	kinds map[string]Kind
	// variants are the server variants of Source.Variants.
	variants map[string]bool
}

// notSentBy checks that a not_sent_by list names only variants of the source.
func (c *checker) notSentBy(where string, list []string) {
	for _, v := range list {
		if !c.variants[v] {
			c.bad("%s: not_sent_by: %q is not one of the source's variants", where, v)
		}
	}
}

func (c *checker) bad(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// typeNames checks the types' names (exported, unique, sorted) and records
// their kinds, for the references checked after.
func (c *checker) typeNames(types []Type) {
	for i, t := range types {
		where := fmt.Sprintf("%s: types[%d] %q", TypesFile, i, t.Name)
		switch {
		case !loadGoNameRE.MatchString(t.Name):
			c.bad("%s: name is not an exported Go identifier", where)
		case c.kinds[t.Name] != "":
			c.bad("%s: duplicate type name", where)
		}
		if i > 0 && t.Name < types[i-1].Name {
			c.bad("%s: types are not sorted by name (after %q)", where, types[i-1].Name)
		}
		c.kinds[t.Name] = t.Kind
		if c.kinds[t.Name] == "" {
			c.kinds[t.Name] = "?" // still a known name, for references
		}
	}
}

// expr checks that a type expression parses and names only defined types.
func (c *checker) expr(where, expr string) {
	e, err := ParseTypeExpr(expr)
	if err != nil {
		c.bad("%s: %v", where, err)
		return
	}
	for _, n := range e.Names() {
		if c.kinds[n] == "" {
			c.bad("%s: type %q is not defined", where, n)
		}
	}
}

func (c *checker) structType(where string, t Type) {
	if t.Base != "" || len(t.Values) > 0 || len(t.Variants) > 0 {
		c.bad("%s: a struct has no base, values or variants", where)
	}
	seen := map[string]bool{}
	for j, f := range t.Fields {
		fw := fmt.Sprintf("%s field[%d] %q", where, j, f.JSON)
		if f.JSON == "" {
			c.bad("%s: empty json key", fw)
		} else if seen[f.JSON] {
			c.bad("%s: duplicate json key", fw)
		}
		seen[f.JSON] = true
		if f.Name != "" && !loadGoNameRE.MatchString(f.Name) {
			c.bad("%s: name %q is not an exported Go identifier", fw, f.Name)
		}
		c.expr(fw, f.Type)
		c.notSentBy(fw, f.NotSentBy)
	}
}

func (c *checker) enumType(where string, t Type) {
	if len(t.Fields) > 0 || len(t.Variants) > 0 {
		c.bad("%s: an enum has no fields or variants", where)
	}
	if t.Base != "" && t.Base != "string" && t.Base != "int64" {
		c.bad("%s: base %q is neither string nor int64", where, t.Base)
	}
	if len(t.Values) == 0 {
		c.bad("%s: an enum needs at least one value", where)
	}
	seen := map[string]bool{}
	for j, v := range t.Values {
		if seen[v.Value] {
			c.bad("%s value[%d]: duplicate value %q", where, j, v.Value)
		}
		seen[v.Value] = true
		if t.Base == "int64" {
			if _, err := strconv.ParseInt(v.Value, 10, 64); err != nil {
				c.bad("%s value[%d]: %q is not an int64", where, j, v.Value)
			}
		}
		if v.Name != "" && !loadGoNameRE.MatchString(v.Name) {
			c.bad("%s value[%d]: name %q is not an exported Go identifier", where, j, v.Name)
		}
	}
}

func (c *checker) unionType(where string, t Type) {
	if len(t.Fields) > 0 || len(t.Values) > 0 || t.Base != "" {
		c.bad("%s: a union has no fields, base or values", where)
	}
	if len(t.Variants) < 2 {
		c.bad("%s: a union needs at least two variants", where)
	}
	for j, v := range t.Variants {
		vw := fmt.Sprintf("%s variant[%d] %q", where, j, v.Type)
		if strings.HasPrefix(v.Type, "*") {
			c.bad("%s: a variant cannot be nullable (the field that holds the union is)", vw)
		}
		c.expr(vw, v.Type)
		if v.Name != "" && !loadGoNameRE.MatchString(v.Name) {
			c.bad("%s: name %q is not an exported Go identifier", vw, v.Name)
		}
		m := v.Match
		if m.JSON != "" && !loadJSONKinds[m.JSON] {
			c.bad("%s: match json %q is not a JSON kind", vw, m.JSON)
		}
		if (len(m.Has) > 0 || len(m.Lacks) > 0 || len(m.Equals) > 0) && m.JSON != "" && m.JSON != "object" {
			c.bad("%s: has, lacks and equals need json object, not %q", vw, m.JSON)
		}
	}
}

// payload checks that a type an event or action names is a struct.
func (c *checker) payload(where, name string) {
	switch c.kinds[name] {
	case KindStruct:
	case "":
		c.bad("%s: payload type %q is not defined", where, name)
	default:
		c.bad("%s: payload type %q is a %s, not a struct", where, name, c.kinds[name])
	}
}

func (c *checker) events(events []Event) {
	seen := map[string]bool{}
	for i, ev := range events {
		where := fmt.Sprintf("%s: events[%d] %q", EventsFile, i, ev.Name)
		if !loadEventNameRE.MatchString(ev.Name) {
			c.bad("%s: event name must be made of [a-z0-9_]", where)
		}
		if seen[ev.Name] {
			c.bad("%s: duplicate event", where)
		} else if i > 0 && ev.Name < events[i-1].Name {
			c.bad("%s: events are not sorted by name (after %q)", where, events[i-1].Name)
		}
		seen[ev.Name] = true
		switch {
		case ev.Type != "" && len(ev.Actions) > 0:
			c.bad("%s: an event has a type or actions, not both", where)
		case ev.Type == "" && len(ev.Actions) == 0:
			c.bad("%s: an event needs a type or actions", where)
		case ev.Type != "":
			c.payload(where, ev.Type)
		}
		if ev.OtherActionsType != "" {
			if len(ev.Actions) == 0 {
				c.bad("%s: other_actions_type needs actions", where)
			}
			c.payload(where+" other_actions_type", ev.OtherActionsType)
		}
		c.actions(where, ev.Actions)
		c.notSentBy(where, ev.NotSentBy)
	}
}

func (c *checker) actions(where string, actions []Action) {
	for j, a := range actions {
		aw := fmt.Sprintf("%s actions[%d] %q", where, j, a.Name)
		c.notSentBy(aw, a.NotSentBy)
		if !loadActionNameRE.MatchString(a.Name) {
			c.bad("%s: action name must be made of [a-z0-9_.-]", aw)
		}
		if j > 0 && a.Name <= actions[j-1].Name {
			c.bad("%s: actions are not sorted and unique (after %q)", aw, actions[j-1].Name)
		}
		if a.Type == "" {
			c.bad("%s: action has no type", aw)
		} else {
			c.payload(aw, a.Type)
		}
	}
}

// contract checks that every name ContractFile lists is a name of s.
func (c *checker) contract(s *Schema, contract []byte) {
	have := make(map[string]bool)
	for _, n := range loadNames(s) {
		have[n] = true
	}
	sc := bufio.NewScanner(bytes.NewReader(contract))
	for line := 1; sc.Scan(); line++ {
		n := strings.TrimSpace(sc.Text())
		if n == "" || strings.HasPrefix(n, "#") {
			continue
		}
		if !have[n] {
			c.bad("%s:%d: name %q is missing from the schema", ContractFile, line, n)
		}
	}
}

// loadNames returns every name of s: each event, then its event.action names.
func loadNames(s *Schema) []string {
	var out []string
	for _, ev := range s.Events {
		out = append(out, ev.Name)
		for _, a := range ev.Actions {
			out = append(out, ev.Name+"."+a.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ExprKind says what a type expression is.
type ExprKind int

// The kinds of type expressions.
const (
	// ExprBuiltin is one of string, bool, int64, float64, timestamp, raw.
	ExprBuiltin ExprKind = iota
	// ExprNamed is a named type of the schema.
	ExprNamed
	// ExprArray is []T.
	ExprArray
	// ExprMap is map[string]T.
	ExprMap
)

// Builtins are the type expressions that need no named type.
var Builtins = []string{"string", "bool", "int64", "float64", "timestamp", "raw"}

// TypeExpr is a parsed type expression (see the package doc for the grammar).
type TypeExpr struct {
	// Kind says which of the forms the expression has.
	Kind ExprKind
	// Name is the builtin or the named type (ExprBuiltin, ExprNamed).
	Name string
	// Elem is the element of an array or the value of a map (ExprArray, ExprMap).
	Elem *TypeExpr
	// ElemNullable reports a "*" before Elem: the element or value may be null.
	ElemNullable bool
}

// String returns the expression in the schema's syntax.
func (e *TypeExpr) String() string {
	star := ""
	if e.ElemNullable {
		star = "*"
	}
	switch e.Kind {
	case ExprArray:
		return "[]" + star + e.Elem.String()
	case ExprMap:
		return "map[string]" + star + e.Elem.String()
	default:
		return e.Name
	}
}

// Names returns the named types the expression uses (at most one).
func (e *TypeExpr) Names() []string {
	for ; e != nil; e = e.Elem {
		if e.Kind == ExprNamed {
			return []string{e.Name}
		}
	}
	return nil
}

// ParseTypeExpr parses a type expression. "*" is accepted only right after "[]" or
// "map[string]": a field's own nullability is Field.Nullable, not a pointer. The
// error wraps ErrInvalidSchema.
func ParseTypeExpr(expr string) (*TypeExpr, error) {
	e, err := loadParseExpr(expr, false)
	if err != nil {
		return nil, fmt.Errorf("type expression %q: %w: %s", expr, ErrInvalidSchema, err.Error())
	}
	return e, nil
}

func loadParseExpr(s string, elem bool) (*TypeExpr, error) {
	nullable := false
	if strings.HasPrefix(s, "*") {
		if !elem {
			return nil, errors.New(`"*" only marks an array element or map value`)
		}
		nullable = true
		s = s[1:]
	}
	var e *TypeExpr
	switch {
	case s == "":
		return nil, errors.New("missing type")
	case strings.HasPrefix(s, "[]"):
		inner, err := loadParseExpr(s[2:], true)
		if err != nil {
			return nil, err
		}
		e = &TypeExpr{Kind: ExprArray, Elem: inner.elem(), ElemNullable: inner.ElemNullable && inner.Kind == exprStar}
	case strings.HasPrefix(s, "map["):
		if !strings.HasPrefix(s, "map[string]") {
			return nil, errors.New("map keys must be string")
		}
		inner, err := loadParseExpr(s[len("map[string]"):], true)
		if err != nil {
			return nil, err
		}
		e = &TypeExpr{Kind: ExprMap, Elem: inner.elem(), ElemNullable: inner.ElemNullable && inner.Kind == exprStar}
	case loadIsBuiltin(s):
		e = &TypeExpr{Kind: ExprBuiltin, Name: s}
	case loadGoNameRE.MatchString(s):
		e = &TypeExpr{Kind: ExprNamed, Name: s}
	default:
		return nil, fmt.Errorf("%q is neither a builtin (%s) nor a type name", s, strings.Join(Builtins, ", "))
	}
	if nullable {
		// A transient wrapper: the caller ([] or map) folds it into ElemNullable.
		return &TypeExpr{Kind: exprStar, Elem: e, ElemNullable: true}, nil
	}
	return e, nil
}

// exprStar marks a "*T" while parsing; it never leaves ParseTypeExpr.
const exprStar ExprKind = -1

// elem unwraps a transient "*T".
func (e *TypeExpr) elem() *TypeExpr {
	if e.Kind == exprStar {
		return e.Elem
	}
	return e
}

func loadIsBuiltin(s string) bool {
	for _, b := range Builtins {
		if s == b {
			return true
		}
	}
	return false
}

// loadPackages reads dir's PackagesFile; a missing file is an empty record.
func loadPackages(dir string) (Packages, error) {
	var rec Packages
	b, err := os.ReadFile(filepath.Join(dir, PackagesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	if err := loadDecodeStrict(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", PackagesFile, err)
	}
	for what, m := range map[string]map[string]string{"events": rec.Events, "types": rec.Types} {
		for k, v := range m {
			if !validPkgName(v) {
				return rec, fmt.Errorf("%s: %s: %q: package %q is not a lower-case Go identifier", PackagesFile, what, k, v)
			}
		}
	}
	return rec, nil
}

func validPkgName(s string) bool {
	if s == "" || s == "codec" {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
