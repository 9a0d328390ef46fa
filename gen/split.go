package gen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// The generated types are split into packages so that no one compile holds
// them all: the compiler keeps every function of a package until it writes the
// package, so its peak memory follows the package's size. Package payloads
// aliases every type, so users never name these packages.
//
// The split is stable across schema updates, so that an update touches only the
// files of what changed: PackagesFile in the schema directory records the
// package of every event and named type, and the generator keeps what it
// records and extends it for what is new:
//
//   - an event goes to the package of its first letter ("push" to events_p);
//   - an enum, or a union of scalars and enums, goes to common: such leaf
//     types are what a spec most often reuses, and common is imported by all;
//   - a new type used by the events of one package goes to that package; a new
//     type used by the events of several packages, or by none, to common,
//     unless it refers to types of one event package: then to that package;
//   - a recorded type stays where it is when a new user appears: the new
//     user's package imports the type's.
//
// Packages import each other freely but without a cycle, and common imports
// no other. The one case that moves a recorded type is a change that would
// break that: a type of common that starts to refer to a type of an event
// package, or two event packages that start to refer to each other. Then the
// types referred to (and what they refer to, out of common) move to common,
// and the record says so, in the diff a reviewer reads.

// commonPkg is the name of the package of the types several event packages
// share.
const commonPkg = "common"

// EventPackage is the package an event goes to when the record has none:
// events_ and the first letter of its name (events_other for a name that does
// not start with a letter). The rule looks at the name alone, so an event's
// package never depends on what else the schema holds.
func EventPackage(event string) string {
	if event != "" {
		if r := rune(event[0]); r < unicode.MaxASCII && unicode.IsLetter(r) {
			return "events_" + strings.ToLower(string(r))
		}
	}
	return "events_other"
}

// PackagesOf returns the record of the split Generate makes of s: s.Packages,
// for what s still has, extended by the rules above. Only what s no longer has
// leaves it; a recorded type moves only to keep the imports free of cycles.
func PackagesOf(s *Schema) (Packages, error) {
	p, err := newPlan(s)
	if err != nil {
		return Packages{}, err
	}
	return p.record, nil
}

// WritePackages writes rec to dir's PackagesFile, sorted, with a header that
// says what it is. It does not rewrite a file whose content is the same.
func WritePackages(dir string, rec Packages) error {
	var buf bytes.Buffer
	buf.WriteString("# The generated package (under payloads/internal) of every event and named type.\n" +
		"# cmd/genpayloads reads it and extends it, so that a type keeps its package across\n" +
		"# schema updates; see package gen (split.go) for the rules. Commit it with the code.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("gen.WritePackages: %w", err)
	}
	path := filepath.Join(dir, PackagesFile)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, buf.Bytes()) {
		return nil
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("gen.WritePackages: %w", err)
	}
	return nil
}

// Moved lists the types whose package differs between two records, as
// "Name: old -> new", sorted: what a reviewer of a schema update should know.
func Moved(before, after Packages) []string {
	var out []string
	for name, pkg := range after.Types {
		if old, ok := before.Types[name]; ok && old != pkg {
			out = append(out, fmt.Sprintf("type %s: %s -> %s", name, old, pkg))
		}
	}
	for name, pkg := range after.Events {
		if old, ok := before.Events[name]; ok && old != pkg {
			out = append(out, fmt.Sprintf("event %s: %s -> %s", name, old, pkg))
		}
	}
	sort.Strings(out)
	return out
}

// pkgPlan is one generated package under the generated package's internal
// directory.
type pkgPlan struct {
	Name    string // "common", "events_p", …
	structs []*structPlan
	enums   []*enumPlan
	unions  []*unionPlan
	events  []*eventPlan
}

// split assigns every struct, enum, union and event to a package: p.pkgs, in
// order (common first, then by name), p.pkgOf by Go name (event interfaces
// included), and p.record.
func (p *plan) split() {
	rec := p.schema.Packages
	// refs[name] are the named types a type's fields or variants name.
	refs := map[string][]string{}
	kinds := map[string]bool{} // every named type generated
	exprRefs := func(es ...*TypeExpr) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Names()...)
		}
		return out
	}
	for _, sp := range p.structs {
		if sp.Event != nil {
			continue
		}
		kinds[sp.GoName] = true
		for _, f := range sp.Fields {
			refs[sp.GoName] = append(refs[sp.GoName], exprRefs(f.Expr)...)
		}
	}
	for _, up := range p.unions {
		kinds[up.GoName] = true
		for _, v := range up.Variants {
			refs[up.GoName] = append(refs[up.GoName], exprRefs(v.Expr)...)
		}
	}
	for _, ep := range p.enums {
		kinds[ep.GoName] = true
	}

	// The events' packages, and the packages whose events reach each type.
	evPkg := map[string]string{}
	users := map[string]map[string]bool{}
	for _, ev := range p.events {
		pkg := rec.Events[ev.Name]
		if pkg == "" {
			pkg = EventPackage(ev.Name)
		}
		evPkg[ev.Name] = pkg
		var visit func(name string)
		visit = func(name string) {
			if users[name] == nil {
				users[name] = map[string]bool{}
			}
			if users[name][pkg] {
				return
			}
			users[name][pkg] = true
			for _, r := range refs[name] {
				visit(r)
			}
		}
		for _, sp := range ev.structs() {
			for _, f := range sp.Fields {
				for _, n := range f.Expr.Names() {
					visit(n)
				}
			}
		}
	}
	// Leaf types (enums, and unions of scalars and enums) name no other
	// type, cost little, and are the types a schema update most often gives
	// a new user (a spec reuses an enum): they live in common, which anything
	// may import, so that no new user ever moves one.
	structNames := map[string]bool{}
	for _, sp := range p.structs {
		structNames[sp.GoName] = true
	}
	var isLeaf func(name string) bool
	isLeaf = func(name string) bool {
		if !kinds[name] || structNames[name] {
			return false
		}
		for _, r := range refs[name] {
			if r == name || !isLeaf(r) {
				return false
			}
		}
		return true
	}
	typePkg := map[string]string{}
	for name := range kinds {
		if pkg := rec.Types[name]; pkg != "" {
			typePkg[name] = pkg
		}
	}
	// A new type: with the events of its one package; else in common, unless
	// it refers to types (recorded, or new and placed first) of one event
	// package: then in that package, so that nothing recorded moves.
	var place func(name string, visiting map[string]bool) string
	place = func(name string, visiting map[string]bool) string {
		if pkg := typePkg[name]; pkg != "" {
			return pkg
		}
		if visiting[name] {
			return commonPkg // a recursive type: its own package decides
		}
		visiting[name] = true
		pkg := commonPkg
		switch {
		case isLeaf(name):
		case len(users[name]) == 1:
			for u := range users[name] {
				pkg = u
			}
		default:
			below := map[string]bool{}
			for _, r := range refs[name] {
				if rp := place(r, visiting); rp != commonPkg {
					below[rp] = true
				}
			}
			if len(below) == 1 {
				for rp := range below {
					pkg = rp
				}
			}
		}
		typePkg[name] = pkg
		return pkg
	}
	typeNames := make([]string, 0, len(kinds))
	for name := range kinds {
		typeNames = append(typeNames, name)
	}
	sort.Strings(typeNames)
	for _, name := range typeNames {
		place(name, map[string]bool{})
	}

	// Keep the imports acyclic, common importing nothing generated: move what
	// breaks it to common, with what it refers to.
	var toCommon func(name string)
	toCommon = func(name string) {
		if typePkg[name] == commonPkg {
			return
		}
		typePkg[name] = commonPkg
		for _, r := range refs[name] {
			toCommon(r)
		}
	}
	for name := range kinds {
		if typePkg[name] == commonPkg {
			for _, r := range refs[name] {
				toCommon(r)
			}
		}
	}
	for {
		// edges[a][b] are the types of b that a's declarations name.
		edges := map[string]map[string][]string{}
		edge := func(from, to string) {
			if pf, pt := p.pkgName(from, typePkg, evPkg), typePkg[to]; pf != pt {
				if edges[pf] == nil {
					edges[pf] = map[string][]string{}
				}
				edges[pf][pt] = append(edges[pf][pt], to)
			}
		}
		for name := range kinds {
			for _, r := range refs[name] {
				edge(name, r)
			}
		}
		for _, ev := range p.events {
			for _, sp := range ev.structs() {
				for _, f := range sp.Fields {
					for _, n := range f.Expr.Names() {
						edge("event "+ev.Name, n)
					}
				}
			}
		}
		cycle := findCycle(edges)
		if cycle == nil {
			break
		}
		for i := range cycle {
			from, to := cycle[i], cycle[(i+1)%len(cycle)]
			for _, name := range edges[from][to] {
				toCommon(name)
			}
		}
	}

	p.record = Packages{Events: evPkg, Types: typePkg}
	pkgs := map[string]*pkgPlan{commonPkg: {Name: commonPkg}}
	get := func(name string) *pkgPlan {
		if pkgs[name] == nil {
			pkgs[name] = &pkgPlan{Name: name}
		}
		return pkgs[name]
	}
	p.pkgOf = map[string]*pkgPlan{}
	for _, ev := range p.events {
		pp := get(evPkg[ev.Name])
		pp.events = append(pp.events, ev)
		if ev.Iface != "" {
			p.pkgOf[ev.Iface] = pp
		}
		// An event's structs stay with its interface, whose marker method is
		// unexported.
		for _, sp := range ev.structs() {
			p.pkgOf[sp.GoName] = pp
		}
	}
	for _, sp := range p.structs {
		pp := p.pkgOf[sp.GoName]
		if pp == nil {
			pp = get(typePkg[sp.GoName])
			p.pkgOf[sp.GoName] = pp
		}
		pp.structs = append(pp.structs, sp)
	}
	for _, up := range p.unions {
		pp := get(typePkg[up.GoName])
		p.pkgOf[up.GoName] = pp
		pp.unions = append(pp.unions, up)
	}
	for _, ep := range p.enums {
		pp := get(typePkg[ep.GoName])
		p.pkgOf[ep.GoName] = pp
		pp.enums = append(pp.enums, ep)
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		if n != commonPkg {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	p.pkgs = []*pkgPlan{pkgs[commonPkg]}
	for _, n := range names {
		p.pkgs = append(p.pkgs, pkgs[n])
	}
}

// pkgName is the package of a type, or of an event given as "event name".
func (p *plan) pkgName(name string, typePkg, evPkg map[string]string) string {
	if ev, ok := strings.CutPrefix(name, "event "); ok {
		return evPkg[ev]
	}
	return typePkg[name]
}

// findCycle returns the packages of one import cycle, in order, or nil; a
// package importing common never closes one (common imports nothing).
func findCycle(edges map[string]map[string][]string) []string {
	nodes := make([]string, 0, len(edges))
	for n := range edges {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		next := make([]string, 0, len(edges[n]))
		for m := range edges[n] {
			next = append(next, m)
		}
		sort.Strings(next)
		for _, m := range next {
			switch color[m] {
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == m {
						found = append([]string(nil), stack[i:]...)
						return true
					}
				}
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}

// structs returns the event's payload structs: its one struct, or its actions'
// and its unknown-action type.
func (ev *eventPlan) structs() []*structPlan {
	if ev.Struct != nil {
		return []*structPlan{ev.Struct}
	}
	return append(append([]*structPlan(nil), ev.Actions...), ev.Unknown)
}
