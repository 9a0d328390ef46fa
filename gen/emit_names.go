package gen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
)

// namesFile holds the names tuple and the parsers behind Parse.
func (g *generator) namesFile(f *jen.File) {
	names := g.plan.names()
	f.Line()
	f.Comment("// emitterEventNames is the tuple EmitterEventNames copies.")
	f.Var().Id("emitterEventNames").Op("=").Index(jen.Op("...")).String().ValuesFunc(func(gr *jen.Group) {
		for _, n := range names {
			gr.Line().Lit(n)
		}
		gr.Line()
	})
	f.Line()
	f.Add(doc(fmt.Sprintf("EmitterEventNames returns every event name and event.action name the schema knows (%d names): "+
		"the events sorted by name, each followed by its event.action names in alphabetical order. "+
		"That order is also plain string order. The slice is a fresh copy on each call: changing it changes nothing else.", len(names))))
	f.Func().Id("EmitterEventNames").Params().Index().String().Block(
		jen.Return(jen.Append(jen.Index().String().Parens(jen.Nil()), jen.Id("emitterEventNames").Index(jen.Empty(), jen.Empty()).Op("..."))),
	)
	var free []string
	for _, ep := range g.plan.events {
		if ep.FreeForm {
			free = append(free, ep.Name)
		}
	}
	sort.Strings(free)
	comment := "IsKnownEventName reports whether name is in EmitterEventNames."
	if len(free) > 0 {
		comment += fmt.Sprintf(" Any event.action of an event whose actions are free-form (%s) is known too.", strings.Join(free, ", "))
	}
	f.Line()
	f.Add(doc(comment))
	f.Func().Id("IsKnownEventName").Params(jen.Id("name").String()).Bool().BlockFunc(func(gr *jen.Group) {
		gr.Id("i").Op(":=").Qual("sort", "SearchStrings").Call(jen.Id("emitterEventNames").Index(jen.Empty(), jen.Empty()), jen.Id("name"))
		gr.If(jen.Id("i").Op("<").Len(jen.Id("emitterEventNames")).Op("&&").Id("emitterEventNames").Index(jen.Id("i")).Op("==").Id("name")).Block(jen.Return(jen.True()))
		if len(free) > 0 {
			gr.List(jen.Id("event"), jen.Id("_"), jen.Id("ok")).Op(":=").Qual("strings", "Cut").Call(jen.Id("name"), jen.Lit("."))
			gr.Switch(jen.Id("event")).Block(
				jen.CaseFunc(func(c *jen.Group) {
					for _, n := range free {
						c.Lit(n)
					}
				}).Block(jen.Return(jen.Id("ok"))),
			)
		}
		gr.Return(jen.False())
	})

	f.Line()
	f.Add(doc("Parse decodes the payload of a delivery of the event called name (the forge's event header, " +
		"such as \"issues\") into its typed payload: for an event with actions, the struct of the payload's action. " +
		"An event the schema does not know gives an *UnknownEvent, and an action it does not know gives the event's " +
		"unknown-action type; both keep the whole payload. The error, a *DecodeError, is only for a body that is " +
		"not a JSON object or does not fit the schema."))
	f.Func().Id("Parse").Params(jen.Id("name").String(), jen.Id("body").Index().Byte()).Params(jen.Id("Payload"), jen.Error()).Block(
		jen.Switch(jen.Id("name")).BlockFunc(func(sw *jen.Group) {
			for _, ep := range g.plan.events {
				sw.Case(jen.Lit(ep.Name)).Block(jen.Return(g.in(eventType(ep), parseFunc(ep)).Call(jen.Id("body"))))
			}
		}),
		jen.Return(g.rt("ParseUnknownEvent").Call(jen.Id("name"), jen.Id("body"))),
	)
}
