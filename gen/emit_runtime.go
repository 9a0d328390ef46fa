package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// runtimeFile is, for a standalone package (Options.Standalone), what this
// module's package payloads declares by hand: the runtime's types and
// functions a user of the package names, by alias.
func (g *generator) runtimeFile(f *jen.File) {
	f.PackageComment(docText(fmt.Sprintf("Package %s holds the typed payloads generated from a schema by "+
		"forgehooks.dev/forgehooks/gen: a struct per event and action, registration helpers (On…Event), Parse, "+
		"and in %s/names the names the schema knows.", g.opts.PackageName, g.opts.PackagePath)))
	types := []struct{ name, doc string }{
		{"Payload", "Payload is the typed payload of one delivery: a generated event struct, an event's unknown-action type, or *UnknownEvent. Parse returns one; a type switch tells them apart."},
		{"UnknownEvent", "UnknownEvent is the payload of an event the schema does not know; it keeps the whole payload (Name, Action, Raw)."},
		{"Registrar", "Registrar is anything typed handlers can be registered with: an *emitter.Emitter, a *webhooks.Webhooks, or a wrapper of either."},
		{"Timestamp", "Timestamp is a point in time as a payload carries it (RFC 3339, other forms, or Unix seconds); it encodes back as it was decoded."},
		{"DecodeError", "DecodeError is the error of decoding a payload: the type, the path and offset in the document, and why (Err wraps ErrSyntax or ErrType)."},
		{"Member", "Member is one member of a JSON object that the schema does not know: Key and its Value as received."},
		{"Object", "Object is implemented by a pointer to every generated struct type, for UnknownMembers."},
	}
	for _, t := range types {
		f.Line()
		f.Add(doc(t.doc))
		f.Type().Id(t.name).Op("=").Add(g.rt(t.name))
	}
	f.Line()
	f.Add(doc("Event is a delivery whose payload has been decoded into P, as typed handlers get it: ID, Name and Payload."))
	f.Type().Id("Event").Types(jen.Id("P").Any()).Op("=").Add(g.rt("Event")).Types(jen.Id("P"))
	f.Line()
	f.Var().DefsFunc(func(gr *jen.Group) {
		gr.Add(doc("ErrSyntax is wrapped by every decoding error about input that is not valid JSON."))
		gr.Id("ErrSyntax").Op("=").Add(g.rt("ErrSyntax"))
		gr.Add(doc("ErrType is wrapped by every decoding error about valid JSON whose value does not have the schema's type."))
		gr.Id("ErrType").Op("=").Add(g.rt("ErrType"))
	})
	f.Line()
	f.Add(doc("UnknownMembers returns the members of o's decoded JSON object that the schema does not know, in the order they arrived."))
	f.Func().Id("UnknownMembers").Params(jen.Id("o").Id("Object")).Index().Id("Member").Block(jen.Return(g.rt("UnknownMembers").Call(jen.Id("o"))))
}
