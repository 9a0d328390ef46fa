package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// registerFile holds the typed registration helpers.
func (g *generator) registerFile(f *jen.File) {
	reg := func(fn, name, event string, parse, payload jen.Code, comment string) {
		f.Line()
		f.Add(doc(comment))
		f.Func().Id(fn).Params(
			jen.Id("r").Id("Registrar"),
			jen.Id("h").Func().Params(jen.Qual("context", "Context"), jen.Id("Event").Types(payload)).Error(),
		).Op("*").Qual(emitterPath, "Listener").Block(
			jen.Return(g.rt("On").Call(jen.Id("r"), jen.Lit(g.opts.PackagePath), jen.Lit(name), jen.Lit(event), parse, jen.Id("h"))),
		)
	}
	for _, ep := range g.plan.events {
		parse := g.in(eventType(ep), parseFunc(ep))
		if ep.Struct != nil {
			reg("On"+ep.Struct.GoName, ep.Name, ep.Name, parse, jen.Op("*").Id(ep.Struct.GoName), fmt.Sprintf(
				"On%s registers h for %q deliveries, decoded into *%s. It returns the listener, for RemoveListener.",
				ep.Struct.GoName, ep.Name, ep.Struct.GoName))
			continue
		}
		fn := "On" + ep.Iface
		f.Line()
		f.Add(doc(fmt.Sprintf("%s registers h for every %q delivery, decoded into its action's struct, or *%s for an action the schema does not know. "+
			"Given actions (such as %q), it registers h for those actions only, with one listener: h gets %s, whose methods "+
			"give what all the actions share. An action the schema does not know panics. "+
			"It returns the listener, for RemoveListener.", fn, ep.Name, ep.Unknown.GoName, ep.Actions[0].Action, ep.Iface)))
		f.Func().Id(fn).Params(
			jen.Id("r").Id("Registrar"),
			jen.Id("h").Func().Params(jen.Qual("context", "Context"), jen.Id("Event").Types(jen.Id(ep.Iface))).Error(),
			jen.Id("actions").Op("...").String(),
		).Op("*").Qual(emitterPath, "Listener").Block(
			jen.Return(g.rt("OnActions").Call(jen.Id("r"), jen.Lit(g.opts.PackagePath), jen.Lit(fn), jen.Lit(ep.Name), jen.Id("IsKnownEventName"), parse, jen.Id("h"), jen.Id("actions"))),
		)
		for _, a := range ep.Actions {
			reg("On"+a.GoName, ep.Name+"."+a.Action, ep.Name, parse, jen.Op("*").Id(a.GoName), fmt.Sprintf(
				"On%s registers h for %q deliveries, decoded into *%s. It returns the listener, for RemoveListener.",
				a.GoName, ep.Name+"."+a.Action, a.GoName))
		}
	}
}

// eventType is the Go name of an event's payload: its struct, or its interface.
func eventType(ep *eventPlan) string {
	if ep.Struct != nil {
		return ep.Struct.GoName
	}
	return ep.Iface
}

// parseFunc is the name of an event's parser, in the event's package.
func parseFunc(ep *eventPlan) string {
	return "Parse" + eventType(ep)
}
