package gen

import (
	"fmt"
	"sort"

	"github.com/dave/jennifer/jen"
)

// The codec: per type, UnmarshalJSON and MarshalJSON over exported decode and
// encode functions (DecodeUser, EncodeUser) that read and write JSON directly
// with package codec's Decoder and Encoder, calling each other for nested
// types, across the generated packages. No reflection.

// codecFile holds the decode and encode functions of the package's types.
func (g *generator) codecFile(f *jen.File) {
	for _, sp := range g.pkg.structs {
		g.marshalers(f, sp.GoName)
		g.structDecode(f, sp)
		g.structEncode(f, sp)
	}
	for _, up := range g.pkg.unions {
		g.marshalers(f, up.GoName)
		g.unionCodec(f, up)
	}
	for _, ep := range g.pkg.enums {
		base, dec, enc := jen.String(), "DecString", "EncString"
		if ep.Int {
			base, dec, enc = jen.Int64(), "DecInt64", "EncInt64"
		}
		f.Line()
		f.Add(doc(fmt.Sprintf("Decode%s reads a value of %s into *x.", ep.GoName, ep.GoName)))
		f.Func().Id("Decode"+ep.GoName).Params(jen.Id("x").Op("*").Id(ep.GoName), jen.Id("d").Op("*").Add(g.rt("Decoder"))).Error().Block(
			jen.Return(g.rt(dec).Call(jen.Parens(jen.Op("*").Add(base.Clone())).Parens(jen.Id("x")), jen.Id("d"))),
		)
		f.Line()
		f.Add(doc(fmt.Sprintf("Encode%s writes *x.", ep.GoName)))
		f.Func().Id("Encode"+ep.GoName).Params(jen.Id("x").Op("*").Id(ep.GoName), jen.Id("e").Op("*").Add(g.rt("Encoder"))).Block(
			g.rt(enc).Call(jen.Parens(jen.Op("*").Add(base)).Parens(jen.Id("x")), jen.Id("e")),
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
		jen.Id("d").Op(":=").Add(g.rt("NewDecoder")).Call(jen.Id("b")),
		jen.Return(jen.Id("d").Dot("Finish").Call(jen.Id("Decode"+name).Call(jen.Id("x"), jen.Op("&").Id("d")), jen.Lit(name))),
	)
	f.Line()
	f.Comment("// MarshalJSON encodes x as it was decoded, unknown members included.")
	f.Func().Params(jen.Id("x").Id(name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Id("e").Op(":=").Add(g.rt("NewEncoder")).Call(),
		jen.Id("Encode"+name).Call(jen.Op("&").Id("x"), jen.Id("e")),
		jen.Return(jen.Id("e").Dot("Result").Call()),
	)
}

// decFunc is the decoder of an expression, a func(*T, *codec.Decoder) error.
func (g *generator) decFunc(e *TypeExpr) *jen.Statement {
	switch e.Kind {
	case ExprNamed:
		return g.decodeFn(e.Name)
	case ExprArray:
		return g.rt("SliceOf").Call(g.elemFunc(e, g.decFunc, "PtrOf"))
	case ExprMap:
		return g.rt("MapOf").Call(g.elemFunc(e, g.decFunc, "PtrOf"))
	}
	if e.Name == "timestamp" {
		return g.rt("DecTimestamp")
	}
	return g.rt("Dec" + builtinSuffix(e.Name))
}

// encFunc is the encoder of an expression, a func(*T, *codec.Encoder).
func (g *generator) encFunc(e *TypeExpr) *jen.Statement {
	switch e.Kind {
	case ExprNamed:
		return g.encodeFn(e.Name)
	case ExprArray:
		return g.rt("SliceEnc").Call(g.elemFunc(e, g.encFunc, "PtrEnc"))
	case ExprMap:
		return g.rt("MapEnc").Call(g.elemFunc(e, g.encFunc, "PtrEnc"))
	}
	if e.Name == "timestamp" {
		return g.rt("EncTimestamp")
	}
	return g.rt("Enc" + builtinSuffix(e.Name))
}

func (g *generator) elemFunc(e *TypeExpr, fn func(*TypeExpr) *jen.Statement, ptr string) *jen.Statement {
	if e.ElemNullable {
		if ptr == "PtrOf" {
			if dec := g.scalarPtrDec(e.Elem); dec != nil {
				return dec
			}
		}
		return g.rt(ptr).Call(fn(e.Elem))
	}
	return fn(e.Elem)
}

// scalarPtrDec is the decoder of a pointer to a builtin scalar, which takes the
// value from the decoder's slabs instead of allocating it (codec's
// DecStringPtr and its siblings), or nil for other types.
func (g *generator) scalarPtrDec(e *TypeExpr) *jen.Statement {
	if e.Kind != ExprBuiltin {
		return nil
	}
	switch e.Name {
	case "string", "int64", "bool", "float64":
		return g.rt("Dec" + builtinSuffix(e.Name) + "Ptr")
	case "timestamp":
		return g.rt("DecTimestampPtr")
	}
	return nil
}

// enumOf returns the enum plan of a named type, or nil when it is not an enum.
func (g *generator) enumOf(e *TypeExpr) *enumPlan {
	return namedIn(e, g.plan.enums, func(ep *enumPlan) string { return ep.GoName })
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
func (g *generator) decodeInto(e *TypeExpr, v *jen.Statement, isPtr bool) *jen.Statement {
	addr := jen.Op("&").Add(v.Clone())
	if isPtr {
		addr = v.Clone()
	}
	switch e.Kind {
	case ExprArray:
		return g.rt("DecSlice").Call(addr, jen.Id("d"), g.elemFunc(e, g.decFunc, "PtrOf"))
	case ExprMap:
		return g.rt("DecMap").Call(addr, jen.Id("d"), g.elemFunc(e, g.decFunc, "PtrOf"))
	}
	return g.decFunc(e).Call(addr, jen.Id("d"))
}

// encodeFrom writes the value of e at v (isPtr: v is a pointer to it).
func (g *generator) encodeFrom(e *TypeExpr, v *jen.Statement, isPtr bool) *jen.Statement {
	addr := jen.Op("&").Add(v.Clone())
	if isPtr {
		addr = v.Clone()
	}
	switch e.Kind {
	case ExprArray:
		return g.rt("EncSlice").Call(addr, jen.Id("e"), g.elemFunc(e, g.encFunc, "PtrEnc"))
	case ExprMap:
		return g.rt("EncMap").Call(addr, jen.Id("e"), g.elemFunc(e, g.encFunc, "PtrEnc"))
	}
	return g.encFunc(e).Call(addr, jen.Id("e"))
}

// structDecode writes a struct's decode function, which reads into a zero value:
// every caller has one (new, a fresh element, a zeroed duplicate member, or
// UnmarshalJSON's reset), and clearing a large struct again on entry would cost
// write barriers while the garbage collector runs.
func (g *generator) structDecode(f *jen.File, sp *structPlan) {
	f.Line()
	f.Add(doc(fmt.Sprintf("Decode%s reads a JSON object into *x, a zero %s.", sp.GoName, sp.GoName)))
	extra := jen.Op("&").Id("x").Dot("extra")
	f.Func().Id("Decode"+sp.GoName).Params(jen.Id("x").Op("*").Id(sp.GoName), jen.Id("d").Op("*").Add(g.rt("Decoder"))).Error().BlockFunc(func(b *jen.Group) {
		if sp.Unknown {
			b.Id("start").Op(":=").Id("d").Dot("Start").Call()
		}
		if sp.NValue > 0 {
			b.Var().Id("seen").Add(g.rt("SeenSet"))
		}
		// The members are read in a loop over OpenObject and NextMember rather
		// than through a closure per member: the switch runs in this function,
		// without an indirect call per member.
		b.List(jen.Id("key"), jen.Id("more"), jen.Err()).Op(":=").Id("d").Dot("OpenObject").Call()
		b.For(jen.Id("more")).BlockFunc(func(lb *jen.Group) {
			unknown := jen.Err().Op("=").Add(g.rt("KeepUnknown")).Call(extra.Clone(), jen.Id("key"), jen.Id("d"))
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
				jen.Err().Op("=").Add(g.rt("AtKey")).Call(jen.Err(), jen.Id("key")),
				jen.Break(),
			)
			lb.List(jen.Id("key"), jen.Id("more"), jen.Err()).Op("=").Id("d").Dot("NextMember").Call()
		})
		if sp.NValue > 0 {
			b.Add(g.rt("SetAbsent")).Call(extra.Clone(), jen.Op("&").Id("seen"), jen.Lit(sp.NValue))
		}
		if sp.Unknown {
			b.If(jen.Err().Op("==").Nil()).Block(
				jen.Id("x").Dot("Raw").Op("=").Id("d").Dot("Since").Call(jen.Id("start")),
			)
		}
		b.Return(jen.Err())
	})
}

// seenDecoders are codec's decoders of a value member of a builtin type that
// read the value, null check and seen mark in one call.
var seenDecoders = map[string]string{"string": "DecStringSeen", "int64": "DecInt64Seen", "bool": "DecBoolSeen"}

// memberDecode is the body of a struct's case for the member fp: it reads the
// value into its field and leaves any error in err. A value member (one with a
// seen bit, fp.Value) goes through codec's SeenSet helpers (seen.go), which
// keep a null one absent.
func (g *generator) memberDecode(sp *structPlan, fp *fieldPlan) []jen.Code {
	v := jen.Id("x").Dot(fp.GoName)
	addr := jen.Op("&").Add(v.Clone())
	seen, i := jen.Op("&").Id("seen"), jen.Lit(fp.Value)
	switch {
	case sp.Event != nil && fp.JSON == "action" && fp.Value >= 0 && fp.Expr.String() == "string":
		// The action member decodes as routing reads it: the last
		// occurrence counts, and a non-string one means no action.
		return []jen.Code{jen.Err().Op("=").Add(g.rt("DecodeAction")).Call(jen.Op("&").Id("x").Dot("extra"), addr, jen.Id("key"), jen.Id("d"), seen, i)}
	case fp.Value >= 0 && fp.Expr.Kind == ExprBuiltin && seenDecoders[fp.Expr.Name] != "":
		return []jen.Code{jen.Err().Op("=").Add(g.rt(seenDecoders[fp.Expr.Name])).Call(addr, jen.Id("d"), seen, i)}
	case fp.Value >= 0 && (fp.Expr.Kind == ExprNamed || fp.Expr.Name == "timestamp"):
		return []jen.Code{jen.Err().Op("=").Add(g.rt("DecSeen")).Call(addr, jen.Id("d"), seen, i, g.decFunc(fp.Expr))}
	case fp.Value >= 0:
		return []jen.Code{jen.If(jen.Id("seen").Dot("Read").Call(jen.Id("d"), i)).Block(
			jen.Err().Op("=").Add(g.decodeInto(fp.Expr, v, false)))}
	case fp.Ptr && g.scalarPtrDec(fp.Expr) != nil:
		return []jen.Code{jen.Err().Op("=").Add(g.scalarPtrDec(fp.Expr).Call(addr, jen.Id("d")))}
	case fp.Ptr && g.enumOf(fp.Expr) != nil:
		// An optional enum takes its value from the decoder's slab of its base
		// type, as an optional string or integer does: *string converts to
		// *Enum, whose underlying type is string.
		base, dec := jen.String(), "DecStringPtr"
		if g.enumOf(fp.Expr).Int {
			base, dec = jen.Int64(), "DecInt64Ptr"
		}
		return []jen.Code{
			jen.Var().Id("p").Op("*").Add(base),
			jen.Err().Op("=").Add(g.rt(dec)).Call(jen.Op("&").Id("p"), jen.Id("d")),
			v.Clone().Op("=").Parens(jen.Op("*").Add(g.ref(fp.Expr.Name))).Parens(jen.Id("p")),
		}
	case fp.Ptr:
		return []jen.Code{jen.Err().Op("=").Add(g.rt("DecPtr")).Call(addr, jen.Id("d"), g.decFunc(fp.Expr))}
	}
	// Only slices and maps are left: a member that is neither a pointer nor a
	// collection is required and not nullable, so it has a seen bit above.
	return []jen.Code{jen.Err().Op("=").Add(g.decodeInto(fp.Expr, v, false))}
}

func (g *generator) structEncode(f *jen.File, sp *structPlan) {
	f.Line()
	f.Add(doc(fmt.Sprintf("Encode%s writes *x as a JSON object: its members as they were decoded.", sp.GoName)))
	extra := jen.Op("&").Id("x").Dot("extra")
	f.Func().Id("Encode"+sp.GoName).Params(jen.Id("x").Op("*").Id(sp.GoName), jen.Id("e").Op("*").Add(g.rt("Encoder"))).BlockFunc(func(b *jen.Group) {
		b.Id("mark").Op(":=").Id("e").Dot("OpenObject").Call()
		for _, fp := range sp.Fields {
			v := jen.Id("x").Dot(fp.GoName)
			cond := v.Clone().Op("!=").Nil()
			if fp.Value >= 0 {
				cond = g.rt("Written").Call(extra.Clone(), jen.Lit(fp.Value))
			}
			b.If(cond).Block(
				jen.Id("e").Dot("Key").Call(keyLit(fp.JSON)),
				g.encodeFrom(fp.Expr, v, fp.Ptr),
			)
		}
		b.Add(g.rt("EncodeUnknown")).Call(extra.Clone(), jen.Id("e"))
		b.Id("e").Dot("CloseObject").Call(jen.Id("mark"))
	})
}

func (g *generator) unionCodec(f *jen.File, up *unionPlan) {
	matches := "match" + up.GoName
	f.Line()
	f.Var().Id(matches).Op("=").Index(jen.Op("...")).Add(g.rt("Match")).ValuesFunc(func(gr *jen.Group) {
		for _, v := range up.Variants {
			gr.Line().Add(matchLit(v.Match))
		}
		gr.Line()
	})
	f.Line()
	f.Add(doc(fmt.Sprintf("Decode%s reads the variant of %s the next JSON value matches into *x.", up.GoName, up.GoName)))
	f.Func().Id("Decode"+up.GoName).Params(jen.Id("x").Op("*").Id(up.GoName), jen.Id("d").Op("*").Add(g.rt("Decoder"))).Error().Block(
		jen.Op("*").Id("x").Op("=").Id(up.GoName).Values(),
		jen.Switch().BlockFunc(func(sw *jen.Group) {
			for i, v := range up.Variants {
				field := jen.Id("x").Dot(v.GoName)
				var body []jen.Code
				if collection(v.Expr) {
					body = append(body, jen.Return(g.decodeInto(v.Expr, field, false)))
				} else {
					body = append(body,
						field.Clone().Op("=").New(g.goType(v.Expr)),
						jen.Return(g.decodeInto(v.Expr, field, true)))
				}
				sw.Case(jen.Id("d").Dot("Matches").Call(jen.Op("&").Id(matches).Index(jen.Lit(i)))).Block(body...)
			}
		}),
		jen.Return(jen.Id("d").Dot("NoVariant").Call(jen.Lit(up.GoName))),
	)
	f.Line()
	f.Add(doc(fmt.Sprintf("Encode%s writes the variant of *x that is set.", up.GoName)))
	f.Func().Id("Encode"+up.GoName).Params(jen.Id("x").Op("*").Id(up.GoName), jen.Id("e").Op("*").Add(g.rt("Encoder"))).BlockFunc(func(b *jen.Group) {
		b.Id("n").Op(":=").Lit(0)
		for _, v := range up.Variants {
			b.If(jen.Id("x").Dot(v.GoName).Op("!=").Nil()).Block(jen.Id("n").Op("++"))
		}
		b.If(jen.Op("!").Id("e").Dot("OneVariant").Call(jen.Lit(up.GoName), jen.Id("n"))).Block(jen.Return())
		b.Switch().BlockFunc(func(sw *jen.Group) {
			for _, v := range up.Variants {
				field := jen.Id("x").Dot(v.GoName)
				sw.Case(field.Clone().Op("!=").Nil()).Block(g.encodeFrom(v.Expr, field, !collection(v.Expr)))
			}
		})
	})
}

func matchLit(m Match) jen.Code {
	d := jen.Dict{}
	if m.JSON != "" {
		d[jen.Id("JSON")] = jen.Lit(m.JSON)
	}
	strs := func(ss []string) jen.Code {
		return jen.Index().String().ValuesFunc(func(g *jen.Group) {
			for _, s := range ss {
				g.Lit(s)
			}
		})
	}
	if len(m.Has) > 0 {
		d[jen.Id("Has")] = strs(m.Has)
	}
	if len(m.Lacks) > 0 {
		d[jen.Id("Lacks")] = strs(m.Lacks)
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
		d[jen.Id("Equals")] = strs(pairs)
	}
	return jen.Values(d)
}
