package gen

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// aliasesFile holds the reference to the runtime's version, and names every
// generated type of the internal packages in package payloads, by an alias
// with the type's doc, and every enum constant, by a constant of the same
// value and type: to users they are payloads' own.
func (g *generator) aliasesFile(f *jen.File) {
	g.runtimeVersionCheck(f)
	type alias struct {
		name string
		doc  jen.Code
	}
	var all []alias
	for _, sp := range g.plan.structs {
		if sp.Event == nil {
			all = append(all, alias{sp.GoName, jen.Add(typeDoc(sp.GoName, "is a type of the forge's payloads.", sp.Doc)).Line().Comment(g.structSummary(sp))})
		}
	}
	for _, ep := range g.plan.events {
		if ep.Iface != "" {
			all = append(all, alias{ep.Iface, jen.Add(doc(eventIfaceDoc(ep))).Line().Comment(g.ifaceSummary(ep))})
		}
		for _, sp := range ep.structs() {
			all = append(all, alias{sp.GoName, jen.Add(doc(eventStructDoc(ep, sp))).Line().Comment(g.structSummary(sp))})
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
		f.Comment(fmt.Sprintf("//\n// Declared in %s.", g.path(g.plan.pkgOf[a.name].Name)))
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

// structSummary is the part of a struct alias's doc that lists its fields (Go
// name, Go type as package payloads names it, JSON key, and the server
// variants that never send it) and its methods, so that go doc of the alias
// shows them: go doc prints an alias's own doc, not its target's.
func (g *generator) structSummary(sp *structPlan) string {
	rows := make([][]string, 0, len(sp.Fields)+1)
	for _, fp := range sp.Fields {
		t := typeString(fp.Expr)
		if fp.Ptr {
			t = "*" + t
		}
		key := strconv.Quote(fp.JSON)
		switch {
		case fp.Value >= 0:
			key += " required"
		case fp.Required && fp.Nullable:
			key += " required, nullable"
		case fp.Nullable:
			key += " nullable"
		}
		if len(fp.NotSentBy) > 0 {
			key += "; not sent by " + strings.Join(fp.NotSentBy, ", ")
		}
		rows = append(rows, []string{fp.GoName, t, key})
	}
	if sp.Unknown {
		rows = append(rows, []string{"Raw", "json.RawMessage", "the payload as received"})
	}
	var b strings.Builder
	b.WriteString("//\n// Fields (Go name, type, JSON key):\n//\n")
	width := [2]int{}
	for _, r := range rows {
		width[0], width[1] = max(width[0], len(r[0])), max(width[1], len(r[1]))
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "//\t%-*s %-*s %s\n", width[0], r[0], width[1], r[1], r[2])
	}
	if len(rows) == 0 {
		b.WriteString("//\t(none)\n")
	}
	var methods []string
	for _, gt := range sp.Getters {
		methods = append(methods, gt.Method+"() "+g.getterResultString(gt.Field.Expr))
	}
	if sp.Event != nil {
		if sp.Event.Iface != "" {
			methods = append(methods, "GetAction() string")
		}
		methods = append(methods, "PayloadName() string")
	}
	methods = append(methods, "MarshalJSON() ([]byte, error)", "UnmarshalJSON([]byte) error")
	sort.Strings(methods)
	b.WriteString("//\n// Methods (the getters are nil-safe: the zero value, or nil, for a nil receiver or an absent member):\n//\n")
	for _, m := range methods {
		b.WriteString("//\t" + m + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ifaceSummary lists the methods of an event's interface, for its alias's doc.
func (g *generator) ifaceSummary(ep *eventPlan) string {
	var b strings.Builder
	b.WriteString("//\n// Methods:\n//\n")
	for _, gp := range ep.Getters {
		t := "string"
		if gp.JSON != "action" {
			t = g.getterResultString(gp.Expr)
		}
		b.WriteString("//\t" + gp.Method + "() " + t + "\n")
	}
	b.WriteString("//\tPayloadName() string\n//\tMarshalJSON() ([]byte, error)")
	return b.String()
}

// getterResultString is getterResult as package payloads spells it.
func (g *generator) getterResultString(e *TypeExpr) string {
	if g.plan.scalar(e) || collection(e) {
		return typeString(e)
	}
	return "*" + typeString(e)
}

// typeString is the Go type of an expression as package payloads names it.
func typeString(e *TypeExpr) string {
	switch e.Kind {
	case ExprNamed:
		return e.Name
	case ExprArray, ExprMap:
		elem := typeString(e.Elem)
		if e.ElemNullable {
			elem = "*" + elem
		}
		if e.Kind == ExprArray {
			return "[]" + elem
		}
		return "map[string]" + elem
	}
	switch e.Name {
	case "timestamp":
		return "Timestamp"
	case "raw":
		return "json.RawMessage"
	}
	return e.Name
}
