package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// parseFile holds the parsers of the package's events, which Parse and the
// registration helpers call.
func (g *generator) parseFile(f *jen.File) {
	// decoded decodes the whole document in d into a new goName, and returns
	// it or the error.
	decoded := func(goName string, d jen.Code) []jen.Code {
		return []jen.Code{
			jen.Id("x").Op(":=").New(jen.Id(goName)),
			jen.Return(g.rt("Decoded").Call(jen.Id("x"),
				jen.Id("d").Dot("Finish").Call(g.decodeFn(goName).Call(jen.Id("x"), d), jen.Lit(goName)))),
		}
	}
	for _, ep := range g.pkg.events {
		f.Line()
		f.Add(doc(fmt.Sprintf("%s decodes the payload of %s %q delivery, for payloads.Parse.", parseFunc(ep), article(ep.Name), ep.Name)))
		fn := f.Func().Id(parseFunc(ep)).Params(jen.Id("in").Add(g.rt("Input"))).Params(g.rt("Payload"), jen.Error())
		if ep.Struct != nil {
			fn.Block(append([]jen.Code{jen.Id("d").Op(":=").Id("in").Dot("Decoder").Call()},
				decoded(ep.Struct.GoName, jen.Op("&").Id("d"))...)...)
			continue
		}
		// The action picks the struct. ParseByAction finds it without a pass of
		// its own in the common case, then calls the decode function, which
		// switches on it.
		dec := "decode" + eventType(ep)
		fn.Block(jen.Return(g.rt("ParseByAction").Call(jen.Id("in"), jen.Id(dec))))
		f.Line()
		f.Func().Id(dec).Params(jen.Id("action").Index().Byte(), jen.Id("d").Op("*").Add(g.rt("Decoder"))).Params(g.rt("Payload"), jen.Error()).Block(
			jen.Switch(jen.String().Parens(jen.Id("action"))).BlockFunc(func(gr *jen.Group) {
				for _, a := range ep.Actions {
					gr.Case(jen.Lit(a.Action)).Block(decoded(a.GoName, jen.Id("d"))...)
				}
				gr.Default().Block(decoded(ep.Unknown.GoName, jen.Id("d"))...)
			}),
		)
	}
}
