package gen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
)

// aliasesFile names every generated type of the internal packages in package
// payloads, by an alias with the type's doc, and every enum constant, by a
// constant of the same value and type: to users they are payloads' own.
func (g *generator) aliasesFile(f *jen.File) {
	type alias struct {
		name string
		doc  jen.Code
	}
	var all []alias
	for _, sp := range g.plan.structs {
		if sp.Event == nil {
			all = append(all, alias{sp.GoName, typeDoc(sp.GoName, "is a type of the forge's payloads.", sp.Doc)})
		}
	}
	for _, ep := range g.plan.events {
		if ep.Iface != "" {
			all = append(all, alias{ep.Iface, doc(eventIfaceDoc(ep))})
		}
		for _, sp := range ep.structs() {
			all = append(all, alias{sp.GoName, doc(eventStructDoc(ep, sp))})
		}
	}
	for _, up := range g.plan.unions {
		all = append(all, alias{up.GoName, jen.Add(typeDoc(up.GoName, "is one of several types.", up.Doc)).Line().
			Comment("//\n// Exactly one field is set: the variant the JSON value matched when decoded.")})
	}
	for _, ep := range g.plan.enums {
		all = append(all, alias{ep.GoName, jen.Add(typeDoc(ep.GoName, "is an enumeration of the forge's payloads.", ep.Doc)).Line().
			Comment("//\n// Values the schema does not list decode too; IsKnown tells them apart.")})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	for _, a := range all {
		f.Line()
		f.Add(a.doc)
		f.Comment(fmt.Sprintf("//\n// Declared, with its fields and methods, in %s.", g.path(g.plan.pkgOf[a.name].Name)))
		f.Type().Id(a.name).Op("=").Add(g.in(a.name, a.name))
	}
	for _, ep := range g.plan.enums {
		f.Line()
		f.Comment(fmt.Sprintf("// The values of %s the schema lists.", ep.GoName))
		f.Const().DefsFunc(func(gr *jen.Group) {
			for _, v := range ep.Values {
				gr.Add(doc(v.Doc))
				gr.Id(v.GoName).Op("=").Add(g.in(ep.GoName, v.GoName))
			}
		})
	}
}

// packageDoc is the package comment of the internal package being generated.
// The package is named as payloads is (see Generate), so the comment says so.
func (g *generator) packageDoc() string {
	what := "the generated payload types that the events of more than one package use"
	if g.pkg.Name != commonPkg {
		var names []string
		for _, ep := range g.pkg.events {
			names = append(names, ep.Name)
		}
		what = fmt.Sprintf("the generated payloads of the events %s, and types they use", strings.Join(names, ", "))
	}
	return fmt.Sprintf("Package %s (%s) holds %s. The package %s names each by an alias, and documents it.",
		g.opts.PackageName, g.path(g.pkg.Name), what, g.opts.PackagePath)
}
