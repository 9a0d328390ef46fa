package gen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
)

// namesPath is the import path of the generated names package.
func (g *generator) namesPath() string { return g.opts.PackagePath + "/names" }

// namesFile holds the names tuple's accessors, which the names package
// answers, and the parsers behind Parse.
func (g *generator) namesFile(f *jen.File) {
	names := g.plan.names()
	np := g.namesPath()
	f.Line()
	f.Add(doc(fmt.Sprintf("EmitterEventNames returns every event name and event.action name the schema knows (%d names): "+
		"the events sorted by name, each followed by its event.action names in alphabetical order. "+
		"That order is also plain string order. The slice is a fresh copy on each call: changing it changes nothing else. "+
		"It is names.All.", len(names))))
	f.Func().Id("EmitterEventNames").Params().Index().String().Block(jen.Return(jen.Qual(np, "All").Call()))
	f.Line()
	f.Add(doc("IsKnownEventName reports whether name is in EmitterEventNames, or an event.action of an event whose actions are free-form. It is names.IsKnown."))
	f.Func().Id("IsKnownEventName").Params(jen.Id("name").String()).Bool().Block(jen.Return(jen.Qual(np, "IsKnown").Call(jen.Id("name"))))
	f.Line()
	f.Add(doc("SentBy reports whether the server variant (such as \"ghes-3.14\") may send name (\"event\" or \"event.action\"): " +
		"false only when the schema records that the variant never sends the event or the action. It is names.SentBy."))
	f.Func().Id("SentBy").Params(jen.List(jen.Id("name"), jen.Id("variant")).String()).Bool().Block(jen.Return(jen.Qual(np, "SentBy").Call(jen.Id("name"), jen.Id("variant"))))

	f.Line()
	f.Add(doc("Parse decodes the payload of a delivery of the event called name (the forge's event header, " +
		"such as \"issues\") into its typed payload: for an event with actions, the struct of the payload's action. " +
		"An event the schema does not know gives an *UnknownEvent, and an action it does not know gives the event's " +
		"unknown-action type; both keep the whole payload. The error, a *DecodeError, is only for a body that is " +
		"not a JSON object or does not fit the schema."))
	f.Func().Id("Parse").Params(jen.Id("name").String(), jen.Id("body").Index().Byte()).Params(jen.Id("Payload"), jen.Error()).Block(
		jen.Return(jen.Id("parse").Call(jen.Id("name"), g.rt("Bytes").Call(jen.Id("body")))),
	)
	f.Line()
	f.Add(doc("parse is Parse of in, which the package's tests also give as codec.Owned."))
	f.Func().Id("parse").Params(jen.Id("name").String(), jen.Id("in").Add(g.rt("Input"))).Params(jen.Id("Payload"), jen.Error()).Block(
		jen.Switch(jen.Id("name")).BlockFunc(func(sw *jen.Group) {
			for _, ep := range g.plan.events {
				sw.Case(jen.Lit(ep.Name)).Block(jen.Return(g.in(eventType(ep), parseFunc(ep)).Call(jen.Id("in"))))
			}
		}),
		jen.Return(g.rt("ParseUnknownEvent").Call(jen.Id("name"), jen.Id("in"))),
	)
}

// namesPkgFile is the names package: the names tuple, IsKnown and the server
// variants' data, standard library only and without a typed payload, so that
// emitter and webhooks check names against the schema without compiling the
// payloads.
func (g *generator) namesPkgFile(f *jen.File) {
	names := g.plan.names()
	f.PackageComment(docText(fmt.Sprintf("Package names lists the event names of the schema %s is generated from, "+
		"and the forge's server variants that do not send some of them. It holds no typed payload and imports the "+
		"standard library only, so that a program that handles raw payloads can check names without compiling %s.",
		g.opts.PackagePath, g.opts.PackagePath)))
	f.Line()
	f.Comment("// all is the tuple All copies.")
	f.Var().Id("all").Op("=").Index(jen.Op("...")).String().ValuesFunc(func(gr *jen.Group) {
		for _, n := range names {
			gr.Line().Lit(n)
		}
		gr.Line()
	})
	f.Line()
	f.Add(doc(fmt.Sprintf("All returns every event name and event.action name the schema knows (%d names): "+
		"the events sorted by name, each followed by its event.action names in alphabetical order. "+
		"That order is also plain string order. The slice is a fresh copy on each call.", len(names))))
	f.Func().Id("All").Params().Index().String().Block(
		jen.Return(jen.Append(jen.Index().String().Parens(jen.Nil()), jen.Id("all").Index(jen.Empty(), jen.Empty()).Op("..."))),
	)
	var free []string
	for _, ep := range g.plan.events {
		if ep.FreeForm {
			free = append(free, ep.Name)
		}
	}
	sort.Strings(free)
	comment := "IsKnown reports whether name is in All."
	if len(free) > 0 {
		comment += fmt.Sprintf(" Any event.action of an event whose actions are free-form (%s) is known too.", strings.Join(free, ", "))
	}
	f.Line()
	f.Add(doc(comment))
	f.Func().Id("IsKnown").Params(jen.Id("name").String()).Bool().BlockFunc(func(gr *jen.Group) {
		gr.Id("i").Op(":=").Qual("sort", "SearchStrings").Call(jen.Id("all").Index(jen.Empty(), jen.Empty()), jen.Id("name"))
		gr.If(jen.Id("i").Op("<").Len(jen.Id("all")).Op("&&").Id("all").Index(jen.Id("i")).Op("==").Id("name")).Block(jen.Return(jen.True()))
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

	variants := g.plan.schema.Source.Variants
	f.Line()
	f.Comment("// variants is the list Variants copies.")
	f.Var().Id("variants").Op("=").Index(jen.Op("...")).String().ValuesFunc(func(gr *jen.Group) {
		for _, v := range variants {
			gr.Lit(v)
		}
	})
	f.Line()
	f.Add(doc(fmt.Sprintf("Variants returns the forge's server variants the schema was compared with (%d), as the published spec names them: "+
		"the values SentBy knows. The slice is a fresh copy on each call.", len(variants))))
	f.Func().Id("Variants").Params().Index().String().Block(
		jen.Return(jen.Append(jen.Index().String().Parens(jen.Nil()), jen.Id("variants").Index(jen.Empty(), jen.Empty()).Op("..."))),
	)
	f.Line()
	f.Add(doc("KnownVariant reports whether variant is one of Variants."))
	f.Func().Id("KnownVariant").Params(jen.Id("variant").String()).Bool().Block(
		jen.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("variants")).Block(
			jen.If(jen.Id("v").Op("==").Id("variant")).Block(jen.Return(jen.True())),
		),
		jen.Return(jen.False()),
	)
	// notSentBy: the names some variants never send, each with those
	// variants (an event's apply to its actions too).
	type entry struct {
		name     string
		variants []string
	}
	var entries []entry
	for _, ep := range g.plan.events {
		if len(ep.NotSentBy) > 0 {
			entries = append(entries, entry{ep.Name, ep.NotSentBy})
		}
		for _, a := range ep.Actions {
			if extra := minus(a.NotSentBy, ep.NotSentBy); len(extra) > 0 {
				entries = append(entries, entry{ep.Name + "." + a.Action, extra})
			}
		}
	}
	f.Line()
	f.Comment("// notSentBy maps a name to the variants that never send it; an event's entry")
	f.Comment("// holds for its actions too.")
	f.Var().Id("notSentBy").Op("=").Map(jen.String()).Index().String().ValuesFunc(func(gr *jen.Group) {
		for _, e := range entries {
			gr.Line().Lit(e.name).Op(":").Values(jen.ListFunc(func(l *jen.Group) {
				for _, v := range e.variants {
					l.Lit(v)
				}
			}))
		}
		if len(entries) > 0 {
			gr.Line()
		}
	})
	f.Line()
	f.Add(doc("SentBy reports whether the server variant (one of Variants, such as \"ghes-3.14\") may send name " +
		"(\"event\" or \"event.action\"): false only when the schema records that the variant never sends the event, " +
		"or the action. An empty variant, or a name or variant the schema does not know, gives true: nothing is recorded against it."))
	f.Func().Id("SentBy").Params(jen.List(jen.Id("name"), jen.Id("variant")).String()).Bool().Block(
		jen.If(jen.Id("variant").Op("==").Lit("")).Block(jen.Return(jen.True())),
		jen.List(jen.Id("event"), jen.Id("_"), jen.Id("_")).Op(":=").Qual("strings", "Cut").Call(jen.Id("name"), jen.Lit(".")),
		jen.For(jen.List(jen.Id("_"), jen.Id("n")).Op(":=").Range().Index().String().Values(jen.Id("event"), jen.Id("name"))).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("notSentBy").Index(jen.Id("n"))).Block(
				jen.If(jen.Id("v").Op("==").Id("variant")).Block(jen.Return(jen.False())),
			),
		),
		jen.Return(jen.True()),
	)
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, v := range a {
		found := false
		for _, w := range b {
			found = found || v == w
		}
		if !found {
			out = append(out, v)
		}
	}
	return out
}
