package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// gettersFile holds the nil-safe getters of every struct (see plan.gettersOf)
// and of every union's variants.
func (g *generator) gettersFile(f *jen.File) {
	for _, sp := range g.pkg.structs {
		for _, gt := range sp.Getters {
			g.getter(f, sp, gt)
		}
	}
	for _, up := range g.pkg.unions {
		for _, v := range up.Variants {
			g.variantGetter(f, up, v)
		}
	}
}

// variantGetter writes the GetX method of a union's variant X: nil-safe, as
// a struct's getter of an optional member of the same type is (a scalar's
// value or its zero value; otherwise the variant's pointer or collection,
// nil when another variant was decoded).
func (g *generator) variantGetter(f *jen.File, up *unionPlan, vp *variantPlan) {
	x, v := jen.Id("x"), jen.Id("x").Dot(vp.GoName)
	zero, zeroText := g.zeroOf(vp.Expr)
	var body []jen.Code
	if g.plan.scalar(vp.Expr) {
		body = []jen.Code{
			jen.If(x.Clone().Op("==").Nil().Op("||").Add(v.Clone()).Op("==").Nil()).Block(jen.Return(zero)),
			jen.Return(jen.Op("*").Add(v.Clone())),
		}
	} else {
		body = []jen.Code{
			jen.If(x.Clone().Op("==").Nil()).Block(jen.Return(zero)),
			jen.Return(v.Clone()),
		}
	}
	method := "Get" + vp.GoName
	f.Line()
	f.Add(doc(fmt.Sprintf("%s returns the %s variant, or %s when x is nil or holds another variant.", method, vp.GoName, zeroText)))
	f.Func().Params(jen.Id("x").Op("*").Id(up.GoName)).Id(method).Params().Add(g.getterResult(vp.Expr)).Block(body...)
}

// getter writes one GetX method: nil-safe, a scalar's value (or its zero value)
// for an optional scalar, a pointer to a struct, nil when it was absent.
func (g *generator) getter(f *jen.File, sp *structPlan, gt *fieldGetter) {
	fp := gt.Field
	x, v := jen.Id("x"), jen.Id("x").Dot(fp.GoName)
	zero, zeroText := g.zeroOf(fp.Expr)
	var when string
	var body []jen.Code
	switch {
	case g.plan.scalar(fp.Expr) && fp.Ptr:
		when = "x is nil or the member is absent or null"
		body = []jen.Code{
			jen.If(x.Clone().Op("==").Nil().Op("||").Add(v.Clone()).Op("==").Nil()).Block(jen.Return(zero)),
			jen.Return(jen.Op("*").Add(v.Clone())),
		}
	case fp.Value >= 0 && !g.plan.scalar(fp.Expr) && !collection(fp.Expr):
		when = "x is nil or the member was absent or null"
		body = []jen.Code{
			jen.If(x.Clone().Op("==").Nil().Op("||").Op("!").Add(g.rt("Written")).Call(jen.Op("&").Id("x").Dot("extra"), jen.Lit(fp.Value))).Block(jen.Return(zero)),
			jen.Return(jen.Op("&").Add(v.Clone())),
		}
	default:
		when = "x is nil"
		if fp.Ptr || collection(fp.Expr) {
			when = "x is nil or the member is absent or null"
		}
		body = []jen.Code{
			jen.If(x.Clone().Op("==").Nil()).Block(jen.Return(zero)),
			jen.Return(v.Clone()),
		}
	}
	f.Line()
	f.Add(doc(fmt.Sprintf("%s returns the %q member, or %s when %s.", gt.Method, fp.JSON, zeroText, when)))
	f.Func().Params(jen.Id("x").Op("*").Id(sp.GoName)).Id(gt.Method).Params().Add(g.getterResult(fp.Expr)).Block(body...)
}
