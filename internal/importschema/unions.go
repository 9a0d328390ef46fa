package importschema

import (
	"fmt"
	"sort"
	"strings"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// jsonKindOfExpr is the JSON kind of a type's values; "" when it has two (a
// timestamp is a string or an integer).
func jsonKindOfExpr(e texpr) string {
	e = e.resolved()
	var base string
	if e.k == kEnum {
		base = e.cls.base
	}
	return valueKind(e.k, base)
}

// valueKind is the JSON kind of the values of a kind (enumBase: a kEnum's
// base), shared by terms and classes; "" for a kind with none or several.
func valueKind(k tkind, enumBase string) string {
	switch k {
	case kString:
		return "string"
	case kEnum:
		if enumBase == "int64" {
			return "integer"
		}
		return "string"
	case kInt:
		return "integer"
	case kFloat:
		return "number"
	case kBool:
		return "boolean"
	case kArray:
		return "array"
	case kStruct, kMap, kFreeObject:
		return "object"
	}
	return ""
}

// computeMatches gives every union's variants a Match that tells them apart, so
// that at most one holds for any value: by JSON kind, and objects of several shapes
// by a key's constant value, else by a key only one of them has.
func (m *model) computeMatches() error {
	for _, cl := range m.classes {
		if cl.kind != kUnion || cl.alias != nil {
			continue
		}
		ms, err := matchesOf(cl.variants)
		if err != nil && !m.lenient && m.freeForm[cl.where()] != nil && allObjects(cl.variants) {
			// Objects that nothing in them tells apart (an overrides entry says
			// which): the member keeps the object as it came rather than guess.
			*m.freeForm[cl.where()] = true
			cl.alias = &texpr{k: kFreeObject}
			continue
		}
		if err != nil && m.lenient {
			ms = make([]genmodel.Match, len(cl.variants)) // a variant's import only asks what is there
		} else if err != nil {
			return fmt.Errorf("union at %s: %w", cl.where(), err)
		}
		cl.matches = ms
		// A discriminator's one-value enum says no more than the Match does: the
		// member becomes a string, and the noise of one enum per variant goes.
		for i, mt := range ms {
			for key, val := range mt.Equals {
				v := cl.variants[i].resolved()
				if f := v.cls.fieldByKey(key); f != nil {
					f.t = texpr{k: kString}
					f.desc = strings.TrimSpace(f.desc + fmt.Sprintf(" Always %q for this variant.", val))
				}
			}
		}
	}
	return nil
}

// where names the place of the spec that gives a class's first member.
func (cl *class) where() string {
	if len(cl.members) == 0 {
		return fmt.Sprintf("(a join at %s)", cl.origin)
	}
	return cl.members[0].where
}

func matchesOf(vs []texpr) ([]genmodel.Match, error) {
	ms := make([]genmodel.Match, len(vs))
	byKind := map[string][]int{}
	for i, v := range vs {
		k := jsonKindOfExpr(v)
		byKind[k] = append(byKind[k], i)
	}
	if idx := byKind[""]; len(idx) > 0 {
		// A timestamp (string or integer) is told apart only when nothing else is
		// a string or an integer; it then matches both.
		if len(idx) > 1 || len(byKind["string"])+len(byKind["integer"]) > 0 {
			return nil, fmt.Errorf("%w: variants share a JSON kind", errSpec)
		}
	}
	for kind, idx := range byKind {
		switch {
		case kind == "":
			// No condition on the JSON kind; see above.
			continue
		case len(idx) == 1:
			ms[idx[0]] = genmodel.Match{JSON: kind}
		case kind == "object":
			if err := objectMatches(vs, idx, ms); err != nil {
				return nil, err
			}
		default:
			var ws []string
			for _, i := range idx {
				ws = append(ws, vs[i].describe())
			}
			return nil, fmt.Errorf("%w: %d variants are JSON %ss: %s", errSpec, len(idx), kind, strings.Join(ws, ", "))
		}
	}
	return ms, nil
}

// objectMatches tells apart object variants (indexes idx of vs).
func objectMatches(vs []texpr, idx []int, ms []genmodel.Match) error {
	structs := map[int]*class{}
	var rest []int
	for _, i := range idx {
		v := vs[i].resolved()
		if v.k == kStruct {
			structs[i] = v.cls
		} else {
			rest = append(rest, i) // a map or free-form object: no keys to go by
		}
	}
	// A discriminator: a required key whose type is a one-value enum in each.
	if len(rest) == 0 && discriminate(structs, idx, ms, true) {
		return nil
	}
	// Else a required key no other variant has.
	var has []string
	for _, i := range idx {
		s, ok := structs[i]
		if !ok {
			continue
		}
		// Best a key the variant always has, else one it usually has.
		key := ""
		for _, f := range s.fieldsByPresence() {
			// Maps and free-form objects may hold any key; they get Lacks below.
			unique := true
			for _, j := range idx {
				if o, ok := structs[j]; ok && j != i && o.fieldByKey(f.key) != nil {
					unique = false
					break
				}
			}
			if unique {
				key = f.key
				break
			}
		}
		if key == "" {
			rest = append(rest, i)
			continue
		}
		ms[i] = genmodel.Match{JSON: "object", Has: []string{key}}
		has = append(has, key)
	}
	if len(rest) > 1 {
		// The spec's tagged unions whose tag it forgot to require ("type" of the
		// forge's exemption request data): the tag still tells them apart, and
		// only where nothing else does, so that no existing match changes.
		if len(rest) == len(idx) && discriminate(structs, idx, ms, false) {
			return nil
		}
		return fmt.Errorf("%w: %d object variants have no key of their own", errSpec, len(rest))
	}
	if len(rest) == 1 {
		sort.Strings(has)
		ms[rest[0]] = genmodel.Match{JSON: "object", Lacks: has}
	}
	return nil
}

func (cl *class) fieldByKey(key string) *cfield {
	for _, f := range cl.fields {
		if f.key == key {
			return f
		}
	}
	return nil
}

// fieldsByPresence lists the members that are required, then those usually required.
func (cl *class) fieldsByPresence() []*cfield {
	var req, usual []*cfield
	for _, f := range cl.fields {
		switch {
		case f.required:
			req = append(req, f)
		case f.usually:
			usual = append(usual, f)
		}
	}
	return append(req, usual...)
}

// describe names a type for messages: its kind and where the spec gives it.
func (e texpr) describe() string {
	e = e.resolved()
	switch {
	case e.cls != nil:
		return fmt.Sprintf("%s at %s", map[tkind]string{kStruct: "struct", kEnum: "enum", kUnion: "union"}[e.k], e.cls.where())
	case e.elem != nil:
		return "array or map of " + e.elem.describe()
	}
	return exprOf(e)
}

// discriminate sets ms to match each struct variant by the value of one key that
// is a one-value enum, a different value in each, and reports whether it found
// one; required asks for a key every variant requires.
func discriminate(structs map[int]*class, idx []int, ms []genmodel.Match, required bool) bool {
	first := structs[idx[0]]
	if first == nil {
		return false
	}
	for _, f := range first.fields {
		vals := map[string]bool{}
		ok := true
		for _, i := range idx {
			s := structs[i]
			if s == nil {
				return false
			}
			g := s.fieldByKey(f.key)
			if g == nil || (required && !g.required) || g.nullable {
				ok = false
				break
			}
			e := g.t.resolved()
			if e.k != kEnum || len(e.cls.values) != 1 || vals[e.cls.values[0]] {
				ok = false
				break
			}
			vals[e.cls.values[0]] = true
		}
		if ok {
			for _, i := range idx {
				e := structs[i].fieldByKey(f.key).t.resolved()
				ms[i] = genmodel.Match{JSON: "object", Equals: map[string]string{f.key: e.cls.values[0]}}
			}
			return true
		}
	}
	return false
}

// allObjects reports whether every variant is a JSON object.
func allObjects(vs []texpr) bool {
	for _, v := range vs {
		if jsonKindOfExpr(v) != "object" {
			return false
		}
	}
	return len(vs) > 0
}
