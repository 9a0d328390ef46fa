package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// enumsFile holds the enums and their constants.
func (g *generator) enumsFile(f *jen.File) {
	for _, ep := range g.pkg.enums {
		base, lit := jen.String(), func(v string) jen.Code { return jen.Lit(v) }
		if ep.Int {
			base = jen.Int64()
			lit = func(v string) jen.Code { return jen.Id(v) }
		}
		f.Line()
		f.Add(typeDoc(ep.GoName, "is an enumeration of the forge's payloads.", ep.Doc))
		f.Comment("//\n// Values the schema does not list decode too; IsKnown tells them apart.")
		f.Type().Id(ep.GoName).Add(base)
		f.Line()
		f.Line()
		f.Comment(fmt.Sprintf("// The values of %s the schema lists.", ep.GoName))
		f.Const().DefsFunc(func(gr *jen.Group) {
			for _, v := range ep.Values {
				gr.Add(doc(v.Doc))
				gr.Id(v.GoName).Id(ep.GoName).Op("=").Add(lit(v.Value))
			}
		})
		f.Line()
		f.Comment("// IsKnown reports whether v is one of the values the schema lists.")
		f.Func().Params(jen.Id("v").Id(ep.GoName)).Id("IsKnown").Params().Bool().Block(
			jen.Switch(jen.Id("v")).Block(
				jen.CaseFunc(func(gr *jen.Group) {
					for _, v := range ep.Values {
						gr.Id(v.GoName)
					}
				}).Block(jen.Return(jen.True())),
			),
			jen.Return(jen.False()),
		)
	}
}
