package gen

import (
	"sort"

	"github.com/dave/jennifer/jen"
)

// The codec: per type, UnmarshalJSON and MarshalJSON over unexported decode and
// encode methods that read and write JSON directly (package payloads' jsonread.go
// and jsonwrite.go), calling each other for nested types. No reflection.

// codecFile holds every type's decode and encode methods.
func (g *generator) codecFile(f *jen.File) {
	for _, sp := range g.plan.structs {
		g.marshalers(f, sp.GoName)
		// A method of its own rather than one promoted from an embedded extra:
		// promotion would make the compiler write a wrapper per promoted method
		// and type (and per generic shape), thousands of functions in all.
		f.Line()
		f.Func().Params(jen.Id("x").Op("*").Id(sp.GoName)).Id("extras").Params().Op("*").Id("extra").Block(
			jen.Return(jen.Op("&").Id("x").Dot("extra")),
		)
		g.structDecode(f, sp)
		g.structEncode(f, sp)
	}
	for _, up := range g.plan.unions {
		g.marshalers(f, up.GoName)
		g.unionCodec(f, up)
	}
	for _, ep := range g.plan.enums {
		base, dec, enc := jen.String(), "decString", "encString"
		if ep.Int {
			base, dec, enc = jen.Int64(), "decInt64", "encInt64"
		}
		f.Line()
		f.Func().Params(jen.Id("x").Op("*").Id(ep.GoName)).Id("decode").Params(jen.Id("d").Op("*").Id("decoder")).Error().Block(
			jen.Return(jen.Id(dec).Call(jen.Parens(jen.Op("*").Add(base.Clone())).Parens(jen.Id("x")), jen.Id("d"))),
		)
		f.Line()
		f.Func().Params(jen.Id("x").Op("*").Id(ep.GoName)).Id("encode").Params(jen.Id("e").Op("*").Id("encoder")).Block(
			jen.Id(enc).Call(jen.Parens(jen.Op("*").Add(base)).Parens(jen.Id("x")), jen.Id("e")),
		)
	}
}

func (g *generator) marshalers(f *jen.File, name string) {
	f.Line()
	f.Comment("// UnmarshalJSON decodes the forge's JSON, keeping what the schema does not know.")
	// Cleared here for every type: a struct's decode relies on a zero value
	// (see structDecode).
	f.Func().Params(jen.Id("x").Op("*").Id(name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(name).Values(),
		jen.Return(jen.Id("unmarshal").Call(jen.Id("b"), jen.Lit(name), jen.Id("x"))),
	)
	f.Line()
	f.Comment("// MarshalJSON encodes x as it was decoded, unknown members included.")
	// The body calls encode directly: a method value would make x escape, and
	// copy large payload structs to the heap on every call.
	f.Func().Params(jen.Id("x").Id(name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Id("e").Op(":=").Id("newEncoder").Call(),
		jen.Id("x").Dot("encode").Call(jen.Id("e")),
		jen.Return(jen.Id("e").Dot("result").Call()),
	)
}

// decFunc is the decoder of an expression, a func(*T, *decoder) error.
func decFunc(e *TypeExpr) *jen.Statement {
	switch e.Kind {
	case ExprNamed:
		return jen.Parens(jen.Op("*").Id(e.Name)).Dot("decode")
	case ExprArray:
		return jen.Id("sliceOf").Call(elemFunc(e, decFunc, "ptrOf"))
	case ExprMap:
		return jen.Id("mapOf").Call(elemFunc(e, decFunc, "ptrOf"))
	}
	if e.Name == "timestamp" {
		return jen.Parens(jen.Op("*").Id("Timestamp")).Dot("decode")
	}
	return jen.Id("dec" + builtinSuffix(e.Name))
}

// encFunc is the encoder of an expression, a func(*T, *encoder).
func encFunc(e *TypeExpr) *jen.Statement {
	switch e.Kind {
	case ExprNamed:
		return jen.Parens(jen.Op("*").Id(e.Name)).Dot("encode")
	case ExprArray:
		return jen.Id("sliceEnc").Call(elemFunc(e, encFunc, "ptrEnc"))
	case ExprMap:
		return jen.Id("mapEnc").Call(elemFunc(e, encFunc, "ptrEnc"))
	}
	if e.Name == "timestamp" {
		return jen.Parens(jen.Op("*").Id("Timestamp")).Dot("encode")
	}
	return jen.Id("enc" + builtinSuffix(e.Name))
}

func elemFunc(e *TypeExpr, fn func(*TypeExpr) *jen.Statement, ptr string) *jen.Statement {
	if e.ElemNullable {
		if ptr == "ptrOf" {
			if dec := scalarPtrDec(e.Elem); dec != nil {
				return dec
			}
		}
		return jen.Id(ptr).Call(fn(e.Elem))
	}
	return fn(e.Elem)
}

// scalarPtrDec is the decoder of a pointer to a builtin scalar, which takes the
// value from the decoder's slabs instead of allocating it (payloads'
// decStringPtr and its siblings), or nil for other types.
func scalarPtrDec(e *TypeExpr) *jen.Statement {
	if e.Kind != ExprBuiltin {
		return nil
	}
	switch e.Name {
	case "string", "int64", "bool", "float64":
		return jen.Id("dec" + builtinSuffix(e.Name) + "Ptr")
	case "timestamp":
		return jen.Id("decTimestampPtr")
	}
	return nil
}

// enumOf returns the enum plan of a named type, or nil when it is not an enum.
func (g *generator) enumOf(e *TypeExpr) *enumPlan {
	return namedIn(e, g.plan.enums, func(ep *enumPlan) string { return ep.GoName })
}

// structNamed returns the plan of a named type that is a generated struct, or
// nil for anything else.
func (g *generator) structNamed(e *TypeExpr) *structPlan {
	return namedIn(e, g.plan.structs, func(sp *structPlan) string { return sp.GoName })
}

// namedIn returns the plan among plans that has e's name, or nil when e is not
// a named type or no plan has its name.
func namedIn[P any](e *TypeExpr, plans []*P, name func(*P) string) *P {
	if e.Kind != ExprNamed {
		return nil
	}
	for _, p := range plans {
		if name(p) == e.Name {
			return p
		}
	}
	return nil
}

func builtinSuffix(name string) string {
	return map[string]string{"string": "String", "bool": "Bool", "int64": "Int64", "float64": "Float64", "raw": "Raw"}[name]
}

// decodeInto reads a value of e into *p (p is an addressable expression's
// address, given as the expression itself, such as x.Name).
func decodeInto(e *TypeExpr, v *jen.Statement, isPtr bool) *jen.Statement {
	addr := jen.Op("&").Add(v.Clone())
	if isPtr {
		addr = v.Clone()
	}
	switch {
	case e.Kind == ExprArray:
		return jen.Id("decSlice").Call(addr, jen.Id("d"), elemFunc(e, decFunc, "ptrOf"))
	case e.Kind == ExprMap:
		return jen.Id("decMap").Call(addr, jen.Id("d"), elemFunc(e, decFunc, "ptrOf"))
	case e.Kind == ExprNamed || e.Name == "timestamp":
		return v.Clone().Dot("decode").Call(jen.Id("d"))
	}
	return decFunc(e).Call(addr, jen.Id("d"))
}

// encodeFrom writes the value of e at v (isPtr: v is a pointer to it).
func encodeFrom(e *TypeExpr, v *jen.Statement, isPtr bool) *jen.Statement {
	addr := jen.Op("&").Add(v.Clone())
	if isPtr {
		addr = v.Clone()
	}
	switch {
	case e.Kind == ExprArray:
		return jen.Id("encSlice").Call(addr, jen.Id("e"), elemFunc(e, encFunc, "ptrEnc"))
	case e.Kind == ExprMap:
		return jen.Id("encMap").Call(addr, jen.Id("e"), elemFunc(e, encFunc, "ptrEnc"))
	case e.Kind == ExprNamed || e.Name == "timestamp":
		return v.Clone().Dot("encode").Call(jen.Id("e"))
	}
	return encFunc(e).Call(addr, jen.Id("e"))
}

// structDecode writes a struct's decode method, which reads into a zero value:
// every caller has one (new, a fresh element, a zeroed duplicate member, or
// UnmarshalJSON's reset), and clearing a large struct again on entry would cost
// write barriers while the garbage collector runs.
func (g *generator) structDecode(f *jen.File, sp *structPlan) {
	f.Line()
	f.Func().Params(jen.Id("x").Op("*").Id(sp.GoName)).Id("decode").Params(jen.Id("d").Op("*").Id("decoder")).Error().BlockFunc(func(b *jen.Group) {
		if sp.Unknown {
			b.Id("d").Dot("ws").Call()
			b.Id("start").Op(":=").Id("d").Dot("pos")
		}
		if sp.NValue > 0 {
			b.Var().Id("seen").Id("seenSet")
		}
		// The members are read in a loop over openObject and nextMember rather
		// than through d.object and a closure: the switch runs in this function,
		// without an indirect call per member.
		b.List(jen.Id("key"), jen.Id("more"), jen.Err()).Op(":=").Id("d").Dot("openObject").Call()
		b.For(jen.Id("more")).BlockFunc(func(lb *jen.Group) {
			unknown := jen.Err().Op("=").Id("x").Dot("extra").Dot("keepUnknown").Call(jen.Id("key"), jen.Id("d"))
			if len(sp.Fields) == 0 {
				lb.Add(unknown)
			} else {
				lb.Switch(jen.String().Parens(jen.Id("key"))).BlockFunc(func(sw *jen.Group) {
					for _, fp := range sp.Fields {
						sw.Case(jen.Lit(fp.JSON)).Block(g.memberDecode(sp, fp)...)
					}
					sw.Default().Block(unknown)
				})
			}
			lb.If(jen.Err().Op("!=").Nil()).Block(
				jen.Err().Op("=").Id("atKey").Call(jen.Err(), jen.Id("key")),
				jen.Break(),
			)
			lb.List(jen.Id("key"), jen.Id("more"), jen.Err()).Op("=").Id("d").Dot("nextMember").Call()
		})
		if sp.NValue > 0 {
			b.Id("x").Dot("extra").Dot("setAbsent").Call(jen.Op("&").Id("seen"), jen.Lit(sp.NValue))
		}
		if sp.Unknown {
			b.If(jen.Err().Op("==").Nil()).Block(
				jen.Id("x").Dot("Raw").Op("=").Append(jen.Qual("encoding/json", "RawMessage").Parens(jen.Nil()),
					jen.Id("d").Dot("buf").Index(jen.Id("start"), jen.Id("d").Dot("pos")).Op("...")),
			)
		}
		b.Return(jen.Err())
	})
}

// seenDecoders are payloads' decoders of a value member of a builtin type that
// read the value, null check and seen mark in one call.
var seenDecoders = map[string]string{"string": "decStringSeen", "int64": "decInt64Seen", "bool": "decBoolSeen"}

// memberDecode is the body of a struct's case for the member fp: it reads the
// value into its field and leaves any error in err. A value member (one with a
// seen bit, fp.Value) goes through payloads' seenSet helpers (seen.go), which
// keep a null one absent.
func (g *generator) memberDecode(sp *structPlan, fp *fieldPlan) []jen.Code {
	v := jen.Id("x").Dot(fp.GoName)
	addr := jen.Op("&").Add(v.Clone())
	seen, i := jen.Op("&").Id("seen"), jen.Lit(fp.Value)
	switch {
	case sp.Event != nil && fp.JSON == "action" && fp.Value >= 0 && fp.Expr.String() == "string":
		// The action member decodes as routing reads it: the last
		// occurrence counts, and a non-string one means no action.
		return []jen.Code{jen.Err().Op("=").Id("x").Dot("extra").Dot("decodeAction").Call(addr, jen.Id("key"), jen.Id("d"), seen, i)}
	case fp.Value >= 0 && fp.Expr.Kind == ExprBuiltin && seenDecoders[fp.Expr.Name] != "":
		return []jen.Code{jen.Err().Op("=").Id(seenDecoders[fp.Expr.Name]).Call(addr, jen.Id("d"), seen, i)}
	case fp.Value >= 0 && (fp.Expr.Kind == ExprNamed || fp.Expr.Name == "timestamp"):
		return []jen.Code{jen.Err().Op("=").Id("decSeen").Call(addr, jen.Id("d"), seen, i)}
	case fp.Value >= 0:
		return []jen.Code{jen.If(jen.Id("seen").Dot("read").Call(jen.Id("d"), i)).Block(
			jen.Err().Op("=").Add(decodeInto(fp.Expr, v, false)))}
	case fp.Ptr && scalarPtrDec(fp.Expr) != nil:
		return []jen.Code{jen.Err().Op("=").Add(scalarPtrDec(fp.Expr).Call(addr, jen.Id("d")))}
	case fp.Ptr && g.enumOf(fp.Expr) != nil:
		// An optional enum takes its value from the decoder's slab of its base
		// type, as an optional string or integer does: *string converts to
		// *Enum, whose underlying type is string.
		base, dec := jen.String(), "decStringPtr"
		if g.enumOf(fp.Expr).Int {
			base, dec = jen.Int64(), "decInt64Ptr"
		}
		return []jen.Code{
			jen.Var().Id("p").Op("*").Add(base),
			jen.Err().Op("=").Id(dec).Call(jen.Op("&").Id("p"), jen.Id("d")),
			v.Clone().Op("=").Parens(jen.Op("*").Id(fp.Expr.Name)).Parens(jen.Id("p")),
		}
	case fp.Ptr:
		return []jen.Code{jen.Err().Op("=").Id("decPtr").Call(addr, jen.Id("d"), decFunc(fp.Expr))}
	}
	// Only slices and maps are left: a member that is neither a pointer nor a
	// collection is required and not nullable, so it has a seen bit above.
	return []jen.Code{jen.Err().Op("=").Add(decodeInto(fp.Expr, v, false))}
}

func (g *generator) structEncode(f *jen.File, sp *structPlan) {
	f.Line()
	f.Func().Params(jen.Id("x").Op("*").Id(sp.GoName)).Id("encode").Params(jen.Id("e").Op("*").Id("encoder")).BlockFunc(func(b *jen.Group) {
		b.Id("mark").Op(":=").Id("e").Dot("openObject").Call()
		for _, fp := range sp.Fields {
			v := jen.Id("x").Dot(fp.GoName)
			cond := v.Clone().Op("!=").Nil()
			if fp.Value >= 0 {
				cond = jen.Id("x").Dot("extra").Dot("written").Call(jen.Lit(fp.Value))
			}
			b.If(cond).Block(
				jen.Id("e").Dot("key").Call(keyLit(fp.JSON)),
				encodeFrom(fp.Expr, v, fp.Ptr),
			)
		}
		b.Id("x").Dot("extra").Dot("encodeUnknown").Call(jen.Id("e"))
		b.Id("e").Dot("closeObject").Call(jen.Id("mark"))
	})
}

func (g *generator) unionCodec(f *jen.File, up *unionPlan) {
	matches := "match" + up.GoName
	f.Line()
	f.Var().Id(matches).Op("=").Index(jen.Op("...")).Id("match").ValuesFunc(func(gr *jen.Group) {
		for _, v := range up.Variants {
			gr.Line().Add(matchLit(v.Match))
		}
		gr.Line()
	})
	f.Line()
	f.Func().Params(jen.Id("x").Op("*").Id(up.GoName)).Id("decode").Params(jen.Id("d").Op("*").Id("decoder")).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(up.GoName).Values(),
		jen.Switch().BlockFunc(func(sw *jen.Group) {
			for i, v := range up.Variants {
				field := jen.Id("x").Dot(v.GoName)
				var body []jen.Code
				if collection(v.Expr) {
					body = append(body, jen.Return(decodeInto(v.Expr, field, false)))
				} else {
					body = append(body,
						field.Clone().Op("=").New(goType(v.Expr)),
						jen.Return(decodeInto(v.Expr, field, true)))
				}
				sw.Case(jen.Id("d").Dot("matches").Call(jen.Op("&").Id(matches).Index(jen.Lit(i)))).Block(body...)
			}
		}),
		jen.Return(jen.Id("d").Dot("noVariant").Call(jen.Lit(up.GoName))),
	)
	f.Line()
	f.Func().Params(jen.Id("x").Op("*").Id(up.GoName)).Id("encode").Params(jen.Id("e").Op("*").Id("encoder")).BlockFunc(func(b *jen.Group) {
		b.Id("n").Op(":=").Lit(0)
		for _, v := range up.Variants {
			b.If(jen.Id("x").Dot(v.GoName).Op("!=").Nil()).Block(jen.Id("n").Op("++"))
		}
		b.If(jen.Op("!").Id("e").Dot("oneVariant").Call(jen.Lit(up.GoName), jen.Id("n"))).Block(jen.Return())
		b.Switch().BlockFunc(func(sw *jen.Group) {
			for _, v := range up.Variants {
				field := jen.Id("x").Dot(v.GoName)
				sw.Case(field.Clone().Op("!=").Nil()).Block(encodeFrom(v.Expr, field, !collection(v.Expr)))
			}
		})
	})
}

func matchLit(m Match) jen.Code {
	d := jen.Dict{}
	if m.JSON != "" {
		d[jen.Id("json")] = jen.Lit(m.JSON)
	}
	strs := func(ss []string) jen.Code {
		return jen.Index().String().ValuesFunc(func(g *jen.Group) {
			for _, s := range ss {
				g.Lit(s)
			}
		})
	}
	if len(m.Has) > 0 {
		d[jen.Id("has")] = strs(m.Has)
	}
	if len(m.Lacks) > 0 {
		d[jen.Id("lacks")] = strs(m.Lacks)
	}
	if len(m.Equals) > 0 {
		keys := make([]string, 0, len(m.Equals))
		for k := range m.Equals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var pairs []string
		for _, k := range keys {
			pairs = append(pairs, k, m.Equals[k])
		}
		d[jen.Id("equals")] = strs(pairs)
	}
	return jen.Values(d)
}
