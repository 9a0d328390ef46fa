package gen

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The plan is the middle of the pipeline: the schema with every Go name decided,
// every type expression parsed, and every check that could make the output fail to
// compile done, so that the emitters only print.

type plan struct {
	schema  *Schema
	types   map[string]*Type
	structs []*structPlan // shared types, then event structs, by Go name within each
	enums   []*enumPlan
	unions  []*unionPlan
	events  []*eventPlan
	// pkgs are the generated packages under payloads/internal, common first;
	// pkgOf gives each type's (see split).
	pkgs  []*pkgPlan
	pkgOf map[string]*pkgPlan
	// record is the split as PackagesFile records it.
	record Packages
}

// structPlan is one generated struct: a shared type, an event's payload, or an
// event's unknown-action type.
type structPlan struct {
	GoName string
	Doc    string
	Fields []*fieldPlan
	// Getters are the fields that get a nil-safe GetX method (see gettersOf).
	Getters []*fieldGetter
	// NValue counts the value fields, whose absence is tracked (see codec.Extra).
	NValue int
	// Event is set for an event's payload struct and unknown-action type.
	Event *eventPlan
	// Action is the action's name for an event.action struct, "" otherwise.
	Action string
	// Unknown marks the unknown-action type of an event with actions.
	Unknown bool
	// NotSentBy are the server variants that never send the action (or the
	// event, for an event's one struct).
	NotSentBy []string
}

// fieldPlan is one field of a generated struct.
type fieldPlan struct {
	JSON   string
	GoName string
	Doc    string
	Expr   *TypeExpr
	// Ptr reports a field of type *T: optional or nullable, and not a slice, map or
	// raw value (for those nil already means absent).
	Ptr bool
	// Value is the index among the struct's value fields (required, non-nullable:
	// absence tracked), or -1.
	Value int
	// Required and Nullable are the schema's.
	Required, Nullable bool
	// NotSentBy are the server variants that never send the member.
	NotSentBy []string
}

// collection reports whether values of e can be nil (slices, maps, raw values).
func collection(e *TypeExpr) bool {
	return e.Kind == ExprArray || e.Kind == ExprMap || e.Kind == ExprBuiltin && e.Name == "raw"
}

type enumPlan struct {
	GoName string
	Doc    string
	Int    bool // base int64
	Values []enumValuePlan
}

type enumValuePlan struct {
	GoName, Value, Doc string
}

type unionPlan struct {
	GoName   string
	Doc      string
	Variants []*variantPlan
}

type variantPlan struct {
	GoName string
	Expr   *TypeExpr
	Match  Match
}

// eventPlan is one event: either one payload struct, or actions, an interface and
// an unknown-action type.
type eventPlan struct {
	Name   string
	GoBase string // "Issues", "PullRequestReview"
	Doc    string
	// Struct is the payload of an event without actions.
	Struct *structPlan
	// Actions are the event's actions, sorted by name.
	Actions []*structPlan
	// Iface is the sealed interface of an event with actions ("IssuesEvent").
	Iface string
	// Unknown is the unknown-action type of an event with actions.
	Unknown *structPlan
	// Getters are the fields every action shares, offered by the interface.
	Getters []*getterPlan
	// FreeForm reports that any action may arrive (Event.OtherActionsType).
	FreeForm bool
	// NotSentBy are the server variants that never send the event.
	NotSentBy []string
}

// fieldGetter is a struct's nil-safe GetX method of one of its fields.
type fieldGetter struct {
	Method string
	Field  *fieldPlan
}

// navigated are the members users reach for on every payload, whatever its
// action: when some actions of an event have one, with one type, the actions
// that lack it get it too, optional (see eventOf), so that the event's
// interface offers it. The forge sends them on every delivery to an app or
// organization; a spec that leaves one out of an action leaves it out by
// accident.
var navigated = []string{"enterprise", "installation", "organization", "repository", "sender"}

// gettersOf returns a GetX method for every field of sp, in field order: one
// rule, so that a chain such as p.GetInstallation().GetID() always compiles
// and never needs a nil check. A getter returns the value of a scalar (the
// zero value for an absent one), the collection itself, or a pointer to a
// struct or union (nil for an absent one). On an event's structs the methods
// its interface offers keep their names, and the action has its own method
// (see eventMethods).
func (p *plan) gettersOf(sp *structPlan) []*fieldGetter {
	shared := map[string]string{}
	inEvent := sp.Event != nil && sp.Event.Iface != ""
	if inEvent {
		for _, g := range sp.Event.Getters {
			shared[g.JSON] = g.Method
		}
	}
	var out []*fieldGetter
	for _, f := range sp.Fields {
		if inEvent && f.JSON == "action" {
			continue
		}
		method := shared[f.JSON]
		if method == "" {
			method = "Get" + f.GoName
		}
		out = append(out, &fieldGetter{Method: method, Field: f})
	}
	return out
}

// scalar reports whether a getter of e returns a value rather than a pointer:
// a builtin other than raw, a timestamp, or an enum.
func (p *plan) scalar(e *TypeExpr) bool {
	switch e.Kind {
	case ExprBuiltin:
		return e.Name != "raw"
	case ExprNamed:
		t := p.types[e.Name]
		return t != nil && t.Kind == KindEnum
	}
	return false
}

// getterPlan is a method of an event's interface that returns a shared field.
type getterPlan struct {
	Method string // "GetSender"
	JSON   string
	Expr   *TypeExpr
	Doc    string
}

// maxValueMembers is the most value fields (required, non-nullable members) a
// struct may have: the bits of codec's SeenSet.
const maxValueMembers = 128

// generatedFuncs are the package-level functions names.go declares once, which
// no type may take. The hand-written files' names are checked by a test
// (TestHandWrittenNamesAreFree), which reads them, instead of a list here.
var generatedFuncs = []string{"EmitterEventNames", "IsKnownEventName", "Parse", "SentBy"}

// newPlan checks s and decides every name. Its errors list every problem found.
func newPlan(s *Schema) (*plan, error) {
	p := &plan{schema: s, types: make(map[string]*Type, len(s.Types))}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	for i := range s.Types {
		t := &s.Types[i]
		if p.types[t.Name] != nil {
			bad("type %q is defined twice", t.Name)
		}
		p.types[t.Name] = t
	}

	// Every package-level name, with what took it, to report collisions.
	taken := map[string]string{}
	for _, n := range generatedFuncs {
		taken[n] = "a function of names.go"
	}
	claim := func(name, what string) {
		if prev, ok := taken[name]; ok {
			bad("Go name %s of %s is already %s", name, what, prev)
			return
		}
		taken[name] = what
	}

	// Payload types are generated under their event's names; the other types
	// that fields and variants use are generated under their own.
	used := p.reachable()
	for _, name := range used {
		t := p.types[name]
		switch t.Kind {
		case KindStruct:
			sp, err := p.structOf(t, name, t.Description)
			if err != nil {
				bad("%v", err)
				continue
			}
			claim(name, fmt.Sprintf("type %q", name))
			p.structs = append(p.structs, sp)
		case KindEnum:
			ep := &enumPlan{GoName: name, Doc: t.Description, Int: t.Base == "int64"}
			claim(name, fmt.Sprintf("type %q", name))
			suffixes := enumSuffixes(t.Values)
			for i, v := range t.Values {
				vn := suffixes[i]
				ep.Values = append(ep.Values, enumValuePlan{GoName: name + vn, Value: v.Value, Doc: v.Description})
				claim(name+vn, fmt.Sprintf("the constant of value %q of enum %q", v.Value, name))
			}
			p.enums = append(p.enums, ep)
		case KindUnion:
			up := &unionPlan{GoName: name, Doc: t.Description}
			claim(name, fmt.Sprintf("type %q", name))
			fieldNames := map[string]bool{}
			for _, v := range t.Variants {
				e, err := ParseTypeExpr(v.Type)
				if err != nil {
					bad("union %q: %v", name, err)
					continue
				}
				vn := v.Name
				if vn == "" {
					vn = variantName(e)
				}
				if fieldNames[vn] {
					bad("union %q: two variants are named %s: give one a name", name, vn)
				}
				fieldNames[vn] = true
				if len(v.Match.Has) > 32 || len(v.Match.Equals) > 32 {
					// The matcher keeps one bit per condition in a uint64.
					bad("union %q: variant %s has more than 32 has or equals conditions", name, vn)
				}
				up.Variants = append(up.Variants, &variantPlan{GoName: vn, Expr: e, Match: v.Match})
			}
			p.unions = append(p.unions, up)
		default:
			bad("type %q has kind %q", name, t.Kind)
		}
	}

	for i := range s.Events {
		ev := &s.Events[i]
		ep, err := p.eventOf(ev)
		if err != nil {
			bad("%v", err)
			continue
		}
		p.events = append(p.events, ep)
		var structs []*structPlan
		if ep.Struct != nil {
			structs = append(structs, ep.Struct)
		} else {
			claim(ep.Iface, fmt.Sprintf("the interface of event %q", ev.Name))
			structs = append(structs, ep.Actions...)
			structs = append(structs, ep.Unknown)
		}
		for _, sp := range structs {
			what := fmt.Sprintf("the payload of %q", ev.Name)
			if sp.Action != "" {
				what = fmt.Sprintf("the payload of %q", ev.Name+"."+sp.Action)
			}
			if sp.Unknown {
				what = fmt.Sprintf("the unknown-action payload of %q", ev.Name)
			}
			claim(sp.GoName, what)
		}
		if ep.Struct != nil {
			claim("On"+ep.Struct.GoName, fmt.Sprintf("the registration helper of %q", ev.Name))
		} else {
			claim("On"+ep.Iface, fmt.Sprintf("the registration helper of %q", ev.Name))
			for _, a := range ep.Actions {
				claim("On"+a.GoName, fmt.Sprintf("the registration helper of %q", ev.Name+"."+a.Action))
			}
		}
	}
	for _, ep := range p.events {
		for _, sp := range append([]*structPlan{ep.Struct, ep.Unknown}, ep.Actions...) {
			if sp != nil {
				p.structs = append(p.structs, sp)
			}
		}
	}

	// Methods of a struct must not take a field's name.
	for _, sp := range p.structs {
		if sp.NValue > maxValueMembers {
			bad("type %s has %d required, non-nullable members; codec's SeenSet holds %d", sp.GoName, sp.NValue, maxValueMembers)
		}
		methods := map[string]bool{"MarshalJSON": true, "UnmarshalJSON": true}
		if sp.Event != nil && sp.Event.Iface != "" {
			for _, g := range sp.Event.Getters {
				methods[g.Method] = true
			}
		}
		sp.Getters = p.gettersOf(sp)
		for _, g := range sp.Getters {
			methods[g.Method] = true
		}
		for _, f := range sp.Fields {
			if methods[f.GoName] {
				bad("type %s: field %s (json %q) has the name of a method: give it another", sp.GoName, f.GoName, f.JSON)
			}
		}
	}

	if names := p.names(); !sort.StringsAreSorted(names) {
		bad("the event names do not sort as a documented tuple: %v", names)
	}

	if len(problems) > 0 {
		return nil, &GenerateError{Problems: problems}
	}
	p.split()
	return p, nil
}

// GenerateError lists every problem that keeps a schema from being generated.
type GenerateError struct {
	Problems []string
}

// Error lists the problems, one per line.
func (e *GenerateError) Error() string {
	return "gen: cannot generate: " + strings.Join(e.Problems, "\n\t")
}

// reachable returns, sorted, the named types that fields and variants use,
// starting from every payload type (which themselves are not included unless
// some field uses them too).
func (p *plan) reachable() []string {
	seen := map[string]bool{}
	var visit func(name string)
	walk := func(expr string) {
		e, err := ParseTypeExpr(expr)
		if err != nil {
			return // reported where the expression is used
		}
		for _, n := range e.Names() {
			if !seen[n] {
				seen[n] = true
				visit(n)
			}
		}
	}
	visit = func(name string) {
		t := p.types[name]
		if t == nil {
			return
		}
		for _, f := range t.Fields {
			walk(f.Type)
		}
		for _, v := range t.Variants {
			walk(v.Type)
		}
	}
	for _, ev := range p.schema.Events {
		for _, n := range payloadTypes(ev) {
			visit(n)
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// payloadTypes returns the payload type names of an event.
func payloadTypes(ev Event) []string {
	var out []string
	if ev.Type != "" {
		out = append(out, ev.Type)
	}
	for _, a := range ev.Actions {
		out = append(out, a.Type)
	}
	if ev.OtherActionsType != "" {
		out = append(out, ev.OtherActionsType)
	}
	return out
}

// structOf plans a struct named goName with the fields of t.
func (p *plan) structOf(t *Type, goName, doc string) (*structPlan, error) {
	if t.Kind != KindStruct {
		return nil, fmt.Errorf("type %q is a %s, not a struct", t.Name, t.Kind)
	}
	sp := &structPlan{GoName: goName, Doc: doc}
	names := map[string]string{}
	for _, f := range t.Fields {
		fp, err := fieldOf(f)
		if err != nil {
			return nil, fmt.Errorf("type %q: %w", t.Name, err)
		}
		if prev, ok := names[fp.GoName]; ok {
			return nil, fmt.Errorf("type %q: json keys %q and %q both give the Go name %s: give one a name", t.Name, prev, f.JSON, fp.GoName)
		}
		names[fp.GoName] = f.JSON
		sp.add(fp)
	}
	return sp, nil
}

// add appends a field, numbering it among the value fields when it is one.
func (sp *structPlan) add(fp *fieldPlan) {
	fp.Value = -1
	if fp.Required && !fp.Nullable && !fp.Ptr {
		fp.Value = sp.NValue
		sp.NValue++
	}
	sp.Fields = append(sp.Fields, fp)
}

func fieldOf(f Field) (*fieldPlan, error) {
	e, err := ParseTypeExpr(f.Type)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", f.JSON, err)
	}
	name := f.Name
	if name == "" {
		if name, err = GoName(f.JSON); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.JSON, err)
		}
	}
	return &fieldPlan{
		JSON: f.JSON, GoName: name, Doc: f.Description, Expr: e,
		Ptr:      (!f.Required || f.Nullable || f.Pointer) && !collection(e),
		Required: f.Required, Nullable: f.Nullable, NotSentBy: f.NotSentBy,
	}, nil
}

// variantName derives a union field's name from the variant's type.
func variantName(e *TypeExpr) string {
	switch e.Kind {
	case ExprArray:
		return variantName(e.Elem) + "s"
	case ExprMap:
		return variantName(e.Elem) + "Map"
	case ExprNamed:
		return e.Name
	}
	n, _ := GoName(e.Name)
	return n
}

func (p *plan) eventOf(ev *Event) (*eventPlan, error) {
	base, err := GoName(ev.Name)
	if err != nil {
		return nil, fmt.Errorf("event %q: %w", ev.Name, err)
	}
	ep := &eventPlan{Name: ev.Name, GoBase: base, Doc: ev.Description, FreeForm: ev.OtherActionsType != "", NotSentBy: ev.NotSentBy}
	typeOf := func(name string) (*Type, error) {
		t := p.types[name]
		if t == nil {
			return nil, fmt.Errorf("event %q: payload type %q is not defined", ev.Name, name)
		}
		return t, nil
	}
	if len(ev.Actions) == 0 {
		t, err := typeOf(ev.Type)
		if err != nil {
			return nil, err
		}
		sp, err := p.structOf(t, base+"Event", joinDoc(ev.Description, t.Description))
		if err != nil {
			return nil, err
		}
		sp.Event, sp.NotSentBy = ep, ev.NotSentBy
		ep.Struct = sp
		return ep, nil
	}
	ep.Iface = base + "Event"
	for _, a := range ev.Actions {
		t, err := typeOf(a.Type)
		if err != nil {
			return nil, err
		}
		an, err := GoName(a.Name)
		if err != nil {
			return nil, fmt.Errorf("event %q action %q: %w", ev.Name, a.Name, err)
		}
		sp, err := p.structOf(t, base+an+"Event", joinDoc(a.Description, t.Description))
		if err != nil {
			return nil, err
		}
		sp.Event, sp.Action, sp.NotSentBy = ep, a.Name, union(ev.NotSentBy, a.NotSentBy)
		ep.Actions = append(ep.Actions, sp)
	}

	addNavigated(ep.Actions)

	// The unknown-action type: the shape of free-form actions when the schema
	// gives one, else the fields every action shares.
	shapes := append([]*structPlan(nil), ep.Actions...)
	var other *structPlan
	if ev.OtherActionsType != "" {
		t, err := typeOf(ev.OtherActionsType)
		if err != nil {
			return nil, err
		}
		if other, err = p.structOf(t, base+"UnknownEvent", t.Description); err != nil {
			return nil, err
		}
		shapes = append(shapes, other)
	}
	ep.Getters = commonGetters(shapes)
	if other != nil {
		ep.Unknown = other
	} else {
		ep.Unknown = &structPlan{GoName: base + "UnknownEvent"}
		for _, g := range ep.Getters {
			f := *ep.Actions[0].field(g.JSON)
			f.Required, f.Nullable = false, false
			if g.JSON == "action" {
				f.Required, f.Expr = true, &TypeExpr{Kind: ExprBuiltin, Name: "string"}
			}
			f.Ptr = !f.Required && !collection(f.Expr)
			ep.Unknown.add(&f)
		}
		if ep.Unknown.field("action") == nil {
			ep.Unknown.add(&fieldPlan{JSON: "action", GoName: "Action", Required: true,
				Expr: &TypeExpr{Kind: ExprBuiltin, Name: "string"}, Doc: "Action is the action the payload arrived with."})
		}
	}
	ep.Unknown.Event, ep.Unknown.Unknown = ep, true
	if ep.Getters == nil || ep.Getters[0].JSON != "action" {
		ep.Getters = append([]*getterPlan{{Method: "GetAction", JSON: "action"}}, ep.Getters...)
	}
	return ep, nil
}

// addNavigated adds each navigated member that some of actions have, all with
// one type, to the actions that lack it, as an optional field.
func addNavigated(actions []*structPlan) {
	for _, json := range navigated {
		var have *fieldPlan
		same := true
		for _, a := range actions {
			if f := a.field(json); f != nil {
				if have != nil && have.Expr.String() != f.Expr.String() {
					same = false
				}
				if have == nil {
					have = f
				}
			}
		}
		if have == nil || !same {
			continue
		}
		for _, a := range actions {
			if a.field(json) == nil {
				f := *have
				f.Required, f.Nullable = false, false
				f.Ptr = !collection(f.Expr)
				f.Doc = joinDoc(have.Doc, "The spec leaves it out of this action; the forge sends it as it does with the event's other actions.")
				a.add(&f)
			}
		}
	}
}

func (sp *structPlan) field(json string) *fieldPlan {
	for _, f := range sp.Fields {
		if f.JSON == json {
			return f
		}
	}
	return nil
}

// commonGetters returns a getter for every field that all shapes have with the
// same type, "action" first, then in the first shape's order.
func commonGetters(shapes []*structPlan) []*getterPlan {
	var out []*getterPlan
	for _, f := range shapes[0].Fields {
		shared := true
		for _, sp := range shapes[1:] {
			g := sp.field(f.JSON)
			if g == nil || (f.JSON != "action" && g.Expr.String() != f.Expr.String()) {
				shared = false
				break
			}
		}
		if !shared {
			continue
		}
		gp := &getterPlan{Method: "Get" + f.GoName, JSON: f.JSON, Expr: f.Expr, Doc: f.Doc}
		if f.JSON == "action" {
			gp.Method, gp.Expr = "GetAction", nil
			out = append([]*getterPlan{gp}, out...)
			continue
		}
		out = append(out, gp)
	}
	return out
}

// names returns the names tuple: each event, then its event.action names.
func (p *plan) names() []string {
	var out []string
	for _, ep := range p.events {
		out = append(out, ep.Name)
		for _, a := range ep.Actions {
			out = append(out, ep.Name+"."+a.Action)
		}
	}
	return out
}

// union returns the sorted union of two lists of variants.
func union(a, b []string) []string {
	set := map[string]bool{}
	for _, v := range append(append([]string(nil), a...), b...) {
		set[v] = true
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// notSentDoc is the sentence the docs of what some server variants never send
// carry, or "".
func notSentDoc(variants []string) string {
	if len(variants) == 0 {
		return ""
	}
	return "Not sent by " + strings.Join(variants, ", ") + "."
}

func joinDoc(parts ...string) string {
	var keep []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, "\n\n")
}

// symbolWords spell the symbols an enum value may consist of, so that "*" or "+1"
// still give a constant name.
var symbolWords = strings.NewReplacer("*", " wildcard ", "+", " plus ", "-", " minus ", ".", " dot ", "/", " slash ", "@", " at ", "#", " hash ")

// enumValueName derives the constant-name suffix of an enum value: GoName of the
// value, of the value with its symbols spelled out, or "Value" before that when
// it starts with a digit ("1" gives Value1); "" gives Empty.
func enumValueName(v string) string {
	if v == "" {
		return "Empty"
	}
	if n, err := GoName(v); err == nil {
		return n
	}
	spelled := symbolWords.Replace(v)
	if n, err := GoName(spelled); err == nil {
		return n
	}
	n, _ := GoName("value " + spelled)
	return n
}

// enumSuffixes returns the constant-name suffix of each value: its Name, or one
// derived by enumValueName. Values that differ only in case or separators
// ("FLAT_RATE" and "flat-rate") derive the same suffix; then the ones written in
// capitals get "Upper" after it, and any left the same are numbered in schema
// order, so that every value keeps a constant.
func enumSuffixes(values []EnumValue) []string {
	out := make([]string, len(values))
	groups := map[string][]int{}
	for i, v := range values {
		if out[i] = v.Name; out[i] == "" {
			out[i] = enumValueName(v.Value)
			groups[out[i]] = append(groups[out[i]], i)
		}
	}
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			if v := values[i].Value; strings.ToUpper(v) == v && strings.ToLower(v) != v {
				out[i] += "Upper"
			}
		}
		seen := map[string]int{}
		for _, i := range idx {
			if n := seen[out[i]]; n > 0 {
				seen[out[i]] = n + 1
				out[i] += strconv.Itoa(n + 1)
				continue
			}
			seen[out[i]] = 1
		}
	}
	return out
}
