package gen

import (
	"fmt"
	"sort"
)

// The generated types are split into packages so that no one compile holds
// them all: the compiler keeps every function of a package until it writes the
// package, so its peak memory follows the package's size. Each event (with its
// actions, its interface and the types only it uses) belongs to one of
// eventGroups packages, packed by size; a type used by events of more than one
// package goes to package common. A type's users are a superset of the users of
// every type it refers to, so common refers only to common, and a group only to
// itself and common: the imports have no cycle. Package payloads aliases
// every type.

// eventGroups is how many packages hold the events.
const eventGroups = 4

// commonPkg is the name of the package of the types several groups share.
const commonPkg = "common"

// pkgPlan is one generated package under payloads/internal.
type pkgPlan struct {
	Name    string // "common", "group1", …
	structs []*structPlan
	enums   []*enumPlan
	unions  []*unionPlan
	events  []*eventPlan
}

// split assigns every struct, enum, union and event to a package: p.pkgs, in
// order (common first), and p.pkgOf by Go name (event interfaces included).
func (p *plan) split() {
	structs := map[string]*structPlan{}
	for _, sp := range p.structs {
		structs[sp.GoName] = sp
	}
	unions := map[string]*unionPlan{}
	for _, up := range p.unions {
		unions[up.GoName] = up
	}
	enums := map[string]*enumPlan{}
	for _, ep := range p.enums {
		enums[ep.GoName] = ep
	}

	// users[name] holds the indices of the events that reach the type.
	users := map[string]map[int]bool{}
	for i, ev := range p.events {
		var visit func(name string)
		use := func(e *TypeExpr) {
			for _, n := range e.Names() {
				visit(n)
			}
		}
		visit = func(name string) {
			if users[name] == nil {
				users[name] = map[int]bool{}
			}
			if users[name][i] {
				return
			}
			users[name][i] = true
			if sp := structs[name]; sp != nil {
				for _, f := range sp.Fields {
					use(f.Expr)
				}
			}
			if up := unions[name]; up != nil {
				for _, v := range up.Variants {
					use(v.Expr)
				}
			}
		}
		for _, sp := range ev.structs() {
			visit(sp.GoName)
		}
	}

	// An event's weight is the size of what only it uses, its own structs
	// included, counted in declarations, fields and getters: what the generated
	// code's length follows.
	weight := func(name string) int {
		switch {
		case structs[name] != nil:
			sp := structs[name]
			return 4 + 3*len(sp.Fields) + len(sp.Getters)
		case unions[name] != nil:
			return 4 + 2*len(unions[name].Variants)
		case enums[name] != nil:
			return 2 + len(enums[name].Values)/4
		}
		return 0
	}
	own := make([]int, len(p.events))
	for name, u := range users {
		if len(u) == 1 {
			for i := range u {
				own[i] += weight(name)
			}
		}
	}
	// Heaviest first into the lightest group, ties by order: deterministic.
	order := make([]int, len(p.events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return own[order[a]] > own[order[b]] })
	common := &pkgPlan{Name: commonPkg}
	p.pkgs = []*pkgPlan{common}
	load := make([]int, eventGroups)
	for g := range eventGroups {
		p.pkgs = append(p.pkgs, &pkgPlan{Name: fmt.Sprintf("group%d", g+1)})
	}
	groupOf := make([]int, len(p.events))
	for _, i := range order {
		g := 0
		for j := range load {
			if load[j] < load[g] {
				g = j
			}
		}
		load[g] += own[i]
		groupOf[i] = g
	}

	p.pkgOf = map[string]*pkgPlan{}
	place := func(name string) *pkgPlan {
		g := -1
		for i := range users[name] {
			if g >= 0 && groupOf[i] != g {
				return common
			}
			g = groupOf[i]
		}
		if g < 0 {
			return common
		}
		return p.pkgs[g+1]
	}
	for i, ev := range p.events {
		pp := p.pkgs[groupOf[i]+1]
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
			pp = place(sp.GoName)
			p.pkgOf[sp.GoName] = pp
		}
		pp.structs = append(pp.structs, sp)
	}
	for _, up := range p.unions {
		pp := place(up.GoName)
		p.pkgOf[up.GoName] = pp
		pp.unions = append(pp.unions, up)
	}
	for _, ep := range p.enums {
		pp := place(ep.GoName)
		p.pkgOf[ep.GoName] = pp
		pp.enums = append(pp.enums, ep)
	}
}

// structs returns the event's payload structs: its one struct, or its actions'
// and its unknown-action type.
func (ev *eventPlan) structs() []*structPlan {
	if ev.Struct != nil {
		return []*structPlan{ev.Struct}
	}
	return append(append([]*structPlan(nil), ev.Actions...), ev.Unknown)
}
