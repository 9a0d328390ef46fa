package importschema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// Report is what a schema update changed, as the generated Go API sees it: events,
// actions, types, members, enum values and union variants added, removed or
// changed. Breaking lists what can stop compiled user code from compiling.
type Report struct {
	Package string `json:"package"`
	From    string `json:"from"` // the old spec version; "" for a first import
	To      string `json:"to"`
	// Rest names the second source's versions, "@octokit/openapi 23.0.2" or
	// "@octokit/openapi 23.0.1 → 23.0.2"; empty when the import has none.
	Rest string `json:"rest,omitempty"`
	// Bump is the semantic-version bump the change implies for the generated API:
	// "major" (something breaks), "minor" (something was added), "patch" (changes
	// that keep every name and Go type), or "none".
	Bump     string   `json:"bump"`
	Breaking []Change `json:"breaking"`
	Changes  []Change `json:"changes"`
	// NewEvents details every added event: its actions and what it brought.
	NewEvents []NewEvent `json:"new_events"`
	// Counts tallies the changes by what changed ("event", "action", "type",
	// "member", "enum value", "variant") and how ("added", "removed", "changed").
	Counts map[string]map[string]int `json:"counts"`
	// Overrides lists the entries of overrides.yaml that no longer change
	// anything: the spec caught up, or what they name moved.
	Overrides []string `json:"overrides_not_applying"`
	// GoneDeclarations lists every exported Go declaration of the generated
	// code that the update removes ("package.Name (kind)": registration
	// helpers, types, fields, getters, enum constants), as the compiler of a
	// program using them would find them missing. Empty when the command was
	// run without a Declarations function (Options).
	GoneDeclarations []string `json:"gone_declarations,omitempty"`
}

// Change is one change of the generated API.
type Change struct {
	What   string `json:"what"` // event, action, type, member, enum value, variant
	Op     string `json:"op"`   // added, removed, changed
	Name   string `json:"name"` // "issues", "issues.opened", "Issue", "Issue.state", ...
	Detail string `json:"detail,omitempty"`
}

// NewEvent sums up an added event.
type NewEvent struct {
	Name       string   `json:"name"`
	Actions    []string `json:"actions"`
	Types      int      `json:"types"`       // new types its payloads use
	Members    int      `json:"members"`     // members of those types
	EnumValues int      `json:"enum_values"` // values of the new enums among them
}

// goFieldType is the Go type the generator gives a member: its type expression,
// with a "*" when the field is a pointer.
func goFieldType(f genmodel.Field) string {
	if ptr, _ := fieldPointer(f); ptr {
		return "*" + f.Type
	}
	return f.Type
}

// compare reports what changed from old to new; old may be nil (a first import).
func compare(old, new *genmodel.Schema) *Report {
	if old == nil {
		old = &genmodel.Schema{}
	}
	r := &Report{Package: new.Source.Package, From: old.Source.Version, To: new.Source.Version, Counts: map[string]map[string]int{}}
	add := func(breaking bool, what, op, name, detail string) {
		c := Change{What: what, Op: op, Name: name, Detail: detail}
		if breaking {
			r.Breaking = append(r.Breaking, c)
		} else {
			r.Changes = append(r.Changes, c)
		}
		if r.Counts[what] == nil {
			r.Counts[what] = map[string]int{}
		}
		r.Counts[what][op]++
	}
	oldEv := map[string]genmodel.Event{}
	for _, e := range old.Events {
		oldEv[e.Name] = e
	}
	newEv := map[string]genmodel.Event{}
	for _, e := range new.Events {
		newEv[e.Name] = e
	}
	oldTypes := typeMap(old)
	newTypes := typeMap(new)

	for _, e := range new.Events {
		o, ok := oldEv[e.Name]
		if !ok {
			ne := NewEvent{Name: e.Name}
			for _, a := range e.Actions {
				ne.Actions = append(ne.Actions, a.Name)
				add(false, "action", "added", e.Name+"."+a.Name, "")
			}
			for _, name := range reachable(new, payloadTypes(e)) {
				if _, had := oldTypes[name]; !had {
					t := newTypes[name]
					ne.Types++
					ne.Members += len(t.Fields)
					ne.EnumValues += len(t.Values)
				}
			}
			add(false, "event", "added", e.Name, fmt.Sprintf("%d actions, %d new types, %d members, %d enum values",
				len(ne.Actions), ne.Types, ne.Members, ne.EnumValues))
			r.NewEvents = append(r.NewEvents, ne)
			continue
		}
		oldAct := map[string]genmodel.Action{}
		for _, a := range o.Actions {
			oldAct[a.Name] = a
		}
		for _, a := range e.Actions {
			oa, had := oldAct[a.Name]
			switch {
			case !had:
				add(false, "action", "added", e.Name+"."+a.Name, "payload "+a.Type)
			case !equalStrings(oa.NotSentBy, a.NotSentBy):
				add(false, "action", "changed", e.Name+"."+a.Name, variantsDetail(oa.NotSentBy, a.NotSentBy))
			}
			delete(oldAct, a.Name)
		}
		for _, name := range sortedKeys(oldAct) {
			add(true, "action", "removed", e.Name+"."+name, "its payload type and typed registration go")
		}
		if !equalStrings(o.NotSentBy, e.NotSentBy) {
			add(false, "event", "changed", e.Name, variantsDetail(o.NotSentBy, e.NotSentBy))
		}
	}
	for _, e := range old.Events {
		if _, ok := newEv[e.Name]; !ok {
			add(true, "event", "removed", e.Name, fmt.Sprintf("%d actions", len(e.Actions)))
		}
	}

	for _, name := range sortedKeys(newTypes) {
		t := newTypes[name]
		o, had := oldTypes[name]
		if !had {
			add(false, "type", "added", name, typeDetail(t))
			continue
		}
		if o.Kind != t.Kind || o.Base != t.Base {
			add(true, "type", "changed", name, fmt.Sprintf("was %s %s, is %s %s", o.Kind, o.Base, t.Kind, t.Base))
			continue
		}
		compareMembers(add, o, t)
	}
	for _, name := range sortedKeys(oldTypes) {
		if _, ok := newTypes[name]; !ok {
			add(true, "type", "removed", name, typeDetail(oldTypes[name]))
		}
	}
	switch {
	case len(r.Breaking) > 0:
		r.Bump = "major"
	case r.count("added") > 0:
		r.Bump = "minor"
	case len(r.Changes) > 0:
		r.Bump = "patch"
	default:
		r.Bump = "none"
	}
	return r
}

// compareMembers reports the changes of one type's members, values or variants.
func compareMembers(add func(bool, string, string, string, string), o, t genmodel.Type) {
	switch t.Kind {
	case genmodel.KindStruct:
		old := map[string]genmodel.Field{}
		for _, f := range o.Fields {
			old[f.JSON] = f
		}
		for _, f := range t.Fields {
			of, had := old[f.JSON]
			delete(old, f.JSON)
			name := t.Name + "." + f.JSON
			switch {
			case !had:
				add(false, "member", "added", name, goFieldType(f))
			case goFieldType(of) != goFieldType(f) || of.Name != f.Name:
				add(true, "member", "changed", name, fmt.Sprintf("Go type %s, was %s", goFieldType(f), goFieldType(of)))
			case of.Required != f.Required || of.Nullable != f.Nullable:
				detail := fmt.Sprintf("required %v, nullable %v (were %v, %v)", f.Required, f.Nullable, of.Required, of.Nullable)
				if f.Pointer {
					detail += "; stays a pointer (schema/lock.yaml)"
				}
				add(false, "member", "changed", name, detail)
			case !equalStrings(of.NotSentBy, f.NotSentBy):
				add(false, "member", "changed", name, variantsDetail(of.NotSentBy, f.NotSentBy))
			}
		}
		for _, k := range sortedKeys(old) {
			add(true, "member", "removed", t.Name+"."+k, goFieldType(old[k]))
		}
	case genmodel.KindEnum:
		old := map[string]bool{}
		for _, v := range o.Values {
			old[v.Value] = true
		}
		for _, v := range t.Values {
			if !old[v.Value] {
				add(false, "enum value", "added", fmt.Sprintf("%s %q", t.Name, v.Value), "")
			}
			delete(old, v.Value)
		}
		for _, v := range sortedKeys(old) {
			add(true, "enum value", "removed", fmt.Sprintf("%s %q", t.Name, v), "its constant goes")
		}
	case genmodel.KindUnion:
		old := map[string]bool{}
		for _, v := range o.Variants {
			old[v.Type] = true
		}
		for _, v := range t.Variants {
			if !old[v.Type] {
				add(false, "variant", "added", t.Name+" | "+v.Type, "")
			}
			delete(old, v.Type)
		}
		for _, v := range sortedKeys(old) {
			add(true, "variant", "removed", t.Name+" | "+v, "")
		}
	}
}

func (r *Report) count(op string) int {
	n := 0
	for _, ops := range r.Counts {
		n += ops[op]
	}
	return n
}

func typeDetail(t genmodel.Type) string {
	switch t.Kind {
	case genmodel.KindStruct:
		return fmt.Sprintf("struct, %d members", len(t.Fields))
	case genmodel.KindEnum:
		return fmt.Sprintf("enum, %d values", len(t.Values))
	}
	return fmt.Sprintf("union, %d variants", len(t.Variants))
}

func variantsDetail(old, new []string) string {
	f := func(l []string) string {
		if len(l) == 0 {
			return "sent by every server variant"
		}
		return "not sent by " + strings.Join(l, ", ")
	}
	return fmt.Sprintf("%s (was: %s)", f(new), f(old))
}

func typeMap(s *genmodel.Schema) map[string]genmodel.Type {
	m := make(map[string]genmodel.Type, len(s.Types))
	for _, t := range s.Types {
		m[t.Name] = t
	}
	return m
}

func payloadTypes(e genmodel.Event) []string {
	var out []string
	for _, n := range append([]string{e.Type, e.OtherActionsType}, actionTypes(e)...) {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

func actionTypes(e genmodel.Event) []string {
	out := make([]string, len(e.Actions))
	for i, a := range e.Actions {
		out[i] = a.Type
	}
	return out
}

// identRE finds the names in a type expression ("[]*Label", "map[string]User").
var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// reachable returns the named types that roots use, directly or not, sorted.
func reachable(s *genmodel.Schema, roots []string) []string {
	types := typeMap(s)
	seen := map[string]bool{}
	var visit func(expr string)
	visit = func(expr string) {
		for _, name := range identRE.FindAllString(expr, -1) {
			t, ok := types[name]
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			for _, f := range t.Fields {
				visit(f.Type)
			}
			for _, v := range t.Variants {
				visit(v.Type)
			}
		}
	}
	for _, r := range roots {
		visit(r)
	}
	return sortedKeys(seen)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// JSON returns the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}

// Summary is the report's first lines: versions, bump and counts.
func (r *Report) Summary() string {
	var b strings.Builder
	from := r.From
	if from == "" {
		from = "(nothing)"
	}
	fmt.Fprintf(&b, "%s %s → %s%s: implied version bump %s; breaking changes: %d.\n", r.Package, from, r.To, r.restSuffix(), r.Bump, len(r.Breaking))
	for _, e := range r.NewEvents {
		fmt.Fprintf(&b, "New event %s: %d actions (%s), %d new types, %d members, %d enum values.\n",
			e.Name, len(e.Actions), strings.Join(e.Actions, ", "), e.Types, e.Members, e.EnumValues)
	}
	for _, c := range r.newActions() {
		fmt.Fprintf(&b, "New action %s.\n", c.Name)
	}
	var parts []string
	for _, what := range []string{"event", "action", "type", "member", "enum value", "variant"} {
		c := r.Counts[what]
		parts = append(parts, fmt.Sprintf("%ss: +%d −%d ~%d.", what, c["added"], c["removed"], c["changed"]))
	}
	b.WriteString(strings.Join(parts, " ") + "\n")
	if len(r.Overrides) > 0 {
		fmt.Fprintf(&b, "%d overrides stopped applying.\n", len(r.Overrides))
	}
	return b.String()
}

// Markdown returns the report as a CHANGELOG.md section: new events and the
// new actions of known events first (what a reader looks for after an
// update), then what breaks compiled code, then every other change.
func (r *Report) Markdown() string {
	var b strings.Builder
	from := r.From
	if from == "" {
		from = "(first import)"
	}
	fmt.Fprintf(&b, "## Schema: %s %s → %s%s\n\n", r.Package, from, r.To, r.restSuffix())
	fmt.Fprintf(&b, "Implied version bump of the generated API: **%s**.\n\n", r.Bump)
	b.WriteString("| | added | removed | changed |\n|---|---|---|---|\n")
	for _, what := range []string{"event", "action", "type", "member", "enum value", "variant"} {
		c := r.Counts[what]
		fmt.Fprintf(&b, "| %ss | %d | %d | %d |\n", what, c["added"], c["removed"], c["changed"])
	}
	if len(r.NewEvents) > 0 {
		b.WriteString("\n### New events\n\n")
		for _, e := range r.NewEvents {
			fmt.Fprintf(&b, "- `%s`: %d actions (`%s`); %d new types with %d members and %d enum values\n",
				e.Name, len(e.Actions), strings.Join(e.Actions, "`, `"), e.Types, e.Members, e.EnumValues)
		}
	}
	newActions := r.newActions()
	if len(newActions) > 0 {
		b.WriteString("\n### New actions\n\n")
		for _, c := range newActions {
			writeChange(&b, c)
		}
	}
	b.WriteString("\n### Breaking changes\n\n")
	if len(r.Breaking) == 0 {
		b.WriteString("None: code that compiled against the previous schema still compiles.\n")
	}
	for _, c := range r.Breaking {
		writeChange(&b, c)
	}
	listed := make(map[Change]bool, len(newActions))
	for _, c := range newActions {
		listed[c] = true
	}
	for _, op := range []string{"added", "removed", "changed"} {
		var list []Change
		for _, c := range r.Changes {
			if c.Op == op && !listed[c] {
				list = append(list, c)
			}
		}
		if len(list) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", strings.ToUpper(op[:1])+op[1:])
		for _, c := range list {
			writeChange(&b, c)
		}
	}
	if len(r.GoneDeclarations) > 0 {
		fmt.Fprintf(&b, "\n### Go declarations that go (%d)\n\n", len(r.GoneDeclarations))
		for _, d := range r.GoneDeclarations {
			fmt.Fprintf(&b, "- `%s`\n", d)
		}
	}
	if len(r.Overrides) > 0 {
		b.WriteString("\n### Overrides that stopped applying\n\n")
		for _, o := range r.Overrides {
			fmt.Fprintf(&b, "- %s\n", o)
		}
	}
	return b.String()
}

// newActions returns the actions added to events the old schema had (a new
// event's actions are listed with it).
func (r *Report) newActions() []Change {
	fresh := make(map[string]bool, len(r.NewEvents))
	for _, e := range r.NewEvents {
		fresh[e.Name] = true
	}
	var list []Change
	for _, c := range r.Changes {
		if c.What != "action" || c.Op != "added" {
			continue
		}
		if event, _, _ := strings.Cut(c.Name, "."); !fresh[event] {
			list = append(list, c)
		}
	}
	return list
}

func writeChange(b *strings.Builder, c Change) {
	fmt.Fprintf(b, "- %s %s `%s`", c.What, c.Op, c.Name)
	if c.Detail != "" {
		fmt.Fprintf(b, ": %s", c.Detail)
	}
	b.WriteString("\n")
}

// goneDeclarations returns the declarations of old that new lacks, by
// decls; nil without decls or an old schema.
func goneDeclarations(decls func(*genmodel.Schema) ([]string, error), old, new *genmodel.Schema) ([]string, error) {
	if decls == nil || old == nil {
		return nil, nil
	}
	before, err := decls(old)
	if err != nil {
		return nil, fmt.Errorf("the declarations of the old schema: %w", err)
	}
	after, err := decls(new)
	if err != nil {
		return nil, fmt.Errorf("the declarations of the new schema: %w", err)
	}
	kept := make(map[string]bool, len(after))
	for _, d := range after {
		kept[d] = true
	}
	var gone []string
	for _, d := range before {
		if !kept[d] {
			gone = append(gone, d)
		}
	}
	return gone, nil
}

// restSuffix is ", " and Rest, or "" when there is no second source.
func (r *Report) restSuffix() string {
	if r.Rest == "" {
		return ""
	}
	return ", " + r.Rest
}
