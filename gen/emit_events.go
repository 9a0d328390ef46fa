package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

// eventsFile holds the event payloads, the events' interfaces, their
// unknown-action types and getters.
func (g *generator) eventsFile(f *jen.File) {
	for _, ep := range g.pkg.events {
		if ep.Struct != nil {
			g.structDecl(f, ep.Struct, doc(eventStructDoc(ep, ep.Struct)))
			f.Line()
			f.Add(doc(fmt.Sprintf("PayloadName returns %q.", ep.Name)))
			f.Func().Params(jen.Op("*").Id(ep.Struct.GoName)).Id("PayloadName").Params().String().Block(jen.Return(jen.Lit(ep.Name)))
			continue
		}
		f.Line()
		f.Add(doc(eventIfaceDoc(ep)))
		f.Type().Id(ep.Iface).InterfaceFunc(func(gr *jen.Group) {
			gr.Add(g.rt("Payload"))
			for _, gp := range ep.Getters {
				gr.Add(getterDoc(gp))
				gr.Id(gp.Method).Params().Add(g.getterType(gp))
			}
			gr.Id("is" + ep.Iface).Params()
		})
		for _, a := range ep.Actions {
			g.structDecl(f, a, doc(eventStructDoc(ep, a)))
			g.eventMethods(f, ep, a)
		}
		g.structDecl(f, ep.Unknown, doc(eventStructDoc(ep, ep.Unknown)))
		g.eventMethods(f, ep, ep.Unknown)
	}
}

// eventIfaceDoc is the doc of an event's interface.
func eventIfaceDoc(ep *eventPlan) string {
	var impl []string
	for _, a := range ep.Actions {
		impl = append(impl, "*"+a.GoName)
	}
	return joinDoc(
		fmt.Sprintf("%s is the payload of %s %q delivery: one of %s, or *%s for an action the schema does not know.",
			ep.Iface, article(ep.Name), ep.Name, strings.Join(impl, ", "), ep.Unknown.GoName),
		ep.Doc,
		"Its methods return the members all its actions have, as the structs' getters do: "+
			"nil for an absent struct, the zero value for an absent scalar.",
		notSentDoc(ep.NotSentBy))
}

// eventStructDoc is the doc of one of an event's structs.
func eventStructDoc(ep *eventPlan, sp *structPlan) string {
	switch {
	case sp == ep.Struct:
		return joinDoc(fmt.Sprintf("%s is the payload of %s %q delivery.", sp.GoName, article(ep.Name), ep.Name), sp.Doc, notSentDoc(sp.NotSentBy))
	case !sp.Unknown:
		return joinDoc(fmt.Sprintf("%s is the payload of %s %q delivery with action %q.", sp.GoName, article(ep.Name), ep.Name, sp.Action), sp.Doc, notSentDoc(sp.NotSentBy))
	case ep.FreeForm:
		return joinDoc(fmt.Sprintf("%s is the payload of %s %q delivery with an action the schema does not list: "+
			"its actions are free-form, and all have this shape. Raw holds the whole payload.", sp.GoName, article(ep.Name), ep.Name), sp.Doc)
	}
	return joinDoc(fmt.Sprintf("%s is the payload of %s %q delivery whose action the schema does not know. "+
		"It has the members all known actions share, the action, and in Raw the whole payload; "+
		"other members are kept as unknown members (see UnknownMembers).", sp.GoName, article(ep.Name), ep.Name), sp.Doc)
}

func getterDoc(gp *getterPlan) *jen.Statement {
	if gp.JSON == "action" {
		return doc("GetAction returns the payload's action.")
	}
	return doc(joinDoc(fmt.Sprintf("%s returns the %q member.", gp.Method, gp.JSON), gp.Doc))
}

func (g *generator) getterType(gp *getterPlan) *jen.Statement {
	if gp.JSON == "action" {
		return jen.String()
	}
	return g.getterResult(gp.Expr)
}

// getterResult is what a getter of a member of type e returns: the value of a
// scalar (builtin, timestamp, enum), the collection itself, or a pointer to a
// struct or union.
func (g *generator) getterResult(e *TypeExpr) *jen.Statement {
	if g.plan.scalar(e) || collection(e) {
		return g.goType(e)
	}
	return jen.Op("*").Add(g.goType(e))
}

// zeroOf is the zero value a getter of e returns, and how its doc says it.
func (g *generator) zeroOf(e *TypeExpr) (jen.Code, string) {
	switch {
	case !g.plan.scalar(e):
		return jen.Nil(), "nil"
	case e.Kind == ExprNamed && g.enumOf(e).Int, e.Name == "int64", e.Name == "float64":
		return jen.Lit(0), "0"
	case e.Kind == ExprNamed, e.Name == "string":
		return jen.Lit(""), `""`
	case e.Name == "bool":
		return jen.False(), "false"
	}
	return g.rt("Timestamp").Values(), "the zero Timestamp" // timestamp
}

// eventMethods writes the interface's unexported methods, and GetAction, on
// one of its structs; the getters of its other members are in getters.go.
func (g *generator) eventMethods(f *jen.File, ep *eventPlan, sp *structPlan) {
	recv := jen.Id("x").Op("*").Id(sp.GoName)
	name := jen.Return(jen.Lit(ep.Name + "." + sp.Action))
	nameDoc := fmt.Sprintf("PayloadName returns %q.", ep.Name+"."+sp.Action)
	if sp.Unknown {
		nameDoc = fmt.Sprintf("PayloadName returns %q and the action, or %q when there is none.", ep.Name+".", ep.Name)
		name = jen.If(jen.Id("a").Op(":=").Id("x").Dot("GetAction").Call(), jen.Id("a").Op("!=").Lit("")).Block(
			jen.Return(jen.Lit(ep.Name + ".").Op("+").Id("a")),
		).Line().Return(jen.Lit(ep.Name))
	}
	f.Line()
	f.Add(doc(nameDoc))
	f.Func().Params(recv).Id("PayloadName").Params().String().Block(name)
	f.Line()
	f.Func().Params(jen.Op("*").Id(sp.GoName)).Id("is" + ep.Iface).Params().Block()
	fp := sp.field("action")
	var body []jen.Code
	switch {
	case !sp.Unknown:
		body = []jen.Code{jen.Return(jen.Lit(sp.Action))}
	case fp == nil:
		body = []jen.Code{jen.Return(jen.Lit(""))}
	default:
		v := jen.Id("x").Dot(fp.GoName)
		if fp.Ptr {
			body = append(body, jen.If(jen.Id("x").Op("==").Nil().Op("||").Id("x").Dot(fp.GoName).Op("==").Nil()).Block(jen.Return(jen.Lit(""))))
			v = jen.Op("*").Id("x").Dot(fp.GoName)
		} else {
			body = append(body, jen.If(jen.Id("x").Op("==").Nil()).Block(jen.Return(jen.Lit(""))))
		}
		if fp.Expr.String() != "string" {
			v = jen.String().Parens(v)
		}
		body = append(body, jen.Return(v))
	}
	f.Line()
	f.Add(doc("GetAction returns the payload's action."))
	f.Func().Params(recv.Clone()).Id("GetAction").Params().String().Block(body...)
}
