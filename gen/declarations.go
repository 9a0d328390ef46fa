package gen

import (
	"sort"
	"strings"
)

// Declaration is one exported Go declaration that Generate makes of a
// schema: what a program using the generated package may name.
type Declaration struct {
	// Package is the import path of the package that declares it: the
	// generated package (opts.PackagePath) for its aliases, registration
	// helpers and enum constants; an internal package for fields and methods.
	Package string
	// Name is the declaration as a program names it after its package:
	// "OnIssuesOpenedEvent", "Repository", "Repository.Name" (a field),
	// "Repository.GetName" (a method), "IssuesEvent.GetSender" (an
	// interface's method), an enum constant by its generated name.
	Name string
	// Kind is "func", "type", "field", "method" or "const".
	Kind string
}

// String is "package.Name (kind)", with the package's last elements after
// the generated package's own name.
func (d Declaration) String() string { return d.Package + "." + d.Name + " (" + d.Kind + ")" }

// Declarations lists every exported declaration Generate makes of s with
// opts, sorted by package and name: so that a schema update can report each
// one that goes, as the compiler would find it missing.
func Declarations(s *Schema, opts Options) ([]Declaration, error) {
	p, err := newPlan(s)
	if err != nil {
		return nil, err
	}
	root := opts.PackagePath
	if root == "" {
		root = DefaultOptions.PackagePath
	}
	var out []Declaration
	add := func(pkg, name, kind string) { out = append(out, Declaration{Package: pkg, Name: name, Kind: kind}) }
	in := func(typeName string) string {
		if pp := p.pkgOf[typeName]; pp != nil {
			return root + "/internal/" + pp.Name
		}
		return root
	}
	for _, sp := range p.structs {
		add(root, sp.GoName, "type")
		for _, f := range sp.Fields {
			add(in(sp.GoName), sp.GoName+"."+f.GoName, "field")
		}
		for _, gt := range sp.Getters {
			add(in(sp.GoName), sp.GoName+"."+gt.Method, "method")
		}
	}
	for _, up := range p.unions {
		add(root, up.GoName, "type")
		for _, v := range up.Variants {
			add(in(up.GoName), up.GoName+"."+v.GoName, "field")
			add(in(up.GoName), up.GoName+".Get"+v.GoName, "method")
		}
	}
	for _, ep := range p.enums {
		add(root, ep.GoName, "type")
		for _, v := range ep.Values {
			add(root, v.GoName, "const")
		}
	}
	for _, ev := range p.events {
		if ev.Struct != nil {
			add(root, "On"+ev.Struct.GoName, "func")
			continue
		}
		add(root, ev.Iface, "type")
		add(root, "On"+ev.Iface, "func")
		for _, gt := range ev.Getters {
			add(in(ev.Iface), ev.Iface+"."+gt.Method, "method")
		}
		for _, a := range ev.Actions {
			add(root, "On"+a.GoName, "func")
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := strings.Compare(out[i].Package, out[j].Package); c != 0 {
			return c < 0
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
