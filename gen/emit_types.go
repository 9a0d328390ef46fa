package gen

import (
	"github.com/dave/jennifer/jen"
)

// typesFile holds the package's doc, the reference to the runtime's
// version, its shared struct and union types.
func (g *generator) typesFile(f *jen.File) {
	f.PackageComment(docText(g.packageDoc()))
	g.runtimeVersionCheck(f)
	if len(g.pkg.structs) > 0 {
		f.Line()
		f.Comment("// extra is embedded in every struct under this name, which no generated field")
		f.Comment("// can take (those are exported); see codec.Extra.")
		f.Type().Id("extra").Op("=").Add(g.rt("Extra"))
	}
	for _, sp := range g.pkg.structs {
		if sp.Event == nil {
			g.structDecl(f, sp, typeDoc(sp.GoName, "is a type of the forge's payloads.", sp.Doc))
		}
	}
	for _, up := range g.pkg.unions {
		f.Line()
		f.Add(typeDoc(up.GoName, "is one of several types.", up.Doc))
		f.Comment("//\n// Exactly one field is set: the variant the JSON value matched when decoded.")
		f.Type().Id(up.GoName).StructFunc(func(gr *jen.Group) {
			for _, v := range up.Variants {
				t := g.goType(v.Expr)
				if !collection(v.Expr) {
					t = jen.Op("*").Add(t)
				}
				gr.Id(v.GoName).Add(t)
			}
		})
	}
}

func (g *generator) structDecl(f *jen.File, sp *structPlan, comment jen.Code) {
	f.Line()
	f.Add(comment)
	f.Type().Id(sp.GoName).StructFunc(func(gr *jen.Group) {
		for _, fp := range sp.Fields {
			gr.Add(doc(joinDoc(fp.Doc, notSentDoc(fp.NotSentBy))))
			gr.Id(fp.GoName).Add(g.fieldType(fp)).Tag(jsonTag(fp))
		}
		if sp.Unknown {
			gr.Comment("// Raw is the payload as received.")
			gr.Id("Raw").Qual("encoding/json", "RawMessage").Tag(map[string]string{"json": "-"})
		}
		gr.Line()
		gr.Id("extra")
	})
}
