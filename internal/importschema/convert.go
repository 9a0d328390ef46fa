package importschema

import (
	"fmt"
	"sort"
	"strings"
)

// tkind is what a term is.
type tkind uint8

const (
	kString tkind = iota
	kBool
	kInt
	kFloat
	kTimestamp
	kRaw        // any JSON value
	kFreeObject // an object with no declared members: raw, unless joined with a struct
	kNull       // only null
	kArray
	kMap
	kStruct
	kEnum
	kUnion
)

// named reports whether terms of the kind become named types.
func (k tkind) named() bool { return k == kStruct || k == kEnum || k == kUnion }

// term is one schema node of the spec, converted: the importer's intermediate form.
// Terms of named kinds are later grouped into classes (one class, one named type).
type term struct {
	id   int // creation order: deterministic, used to break ties
	kind tkind

	elem     *term // kArray, kMap
	elemNull bool  // the element or value may be null

	fields []*tfield // kStruct

	values []string // kEnum, in spec order
	base   string   // kEnum: "" (string) or "int64"

	variants []*term // kUnion, never kNull

	// Naming hints and documentation.
	title string // the schema's title
	comp  string // the component's name when the node is a component schema
	desc  string

	reqList   bool   // a struct's schema has a "required" list (see class.define)
	uses      int    // how many places of the spec use this term
	body      string // the event.action name when the term is an event payload
	mergeWith *term  // a variant of a whole-body oneOf: joins this payload's class

	cls   *class // the class the term belongs to (named kinds)
	where string // where the spec first gives it, for messages
}

// tfield is a member of a struct term.
type tfield struct {
	key      string
	t        *term
	required bool
	nullable bool
	desc     string
}

// converter turns the spec's schema nodes into terms.
type converter struct {
	comps   *jnode // components.schemas
	memo    map[string]convResult
	busy    map[string]bool // components being converted, to catch recursion
	terms   []*term         // every term of a named kind, in creation order
	nextID  int
	scalars map[tkind]*term
	warn    func(format string, args ...any)
}

type convResult struct {
	t        *term
	nullable bool
}

func newConverter(spec *jnode, warn func(string, ...any)) (*converter, error) {
	comps := spec.path("components", "schemas")
	if comps == nil || comps.kind != jObject {
		return nil, fmt.Errorf("%w: no components.schemas object", errSpec)
	}
	return &converter{
		comps:   comps,
		memo:    map[string]convResult{},
		busy:    map[string]bool{},
		scalars: map[tkind]*term{},
		warn:    warn,
	}, nil
}

func (c *converter) newTerm(k tkind) *term {
	c.nextID++
	t := &term{id: c.nextID, kind: k}
	if k.named() {
		c.terms = append(c.terms, t)
	}
	return t
}

// scalar returns the one shared term of a scalar kind.
func (c *converter) scalar(k tkind) *term {
	if t, ok := c.scalars[k]; ok {
		return t
	}
	t := c.newTerm(k)
	c.scalars[k] = t
	return t
}

// refName returns the component a "$ref" names.
func refName(ref string) (string, error) {
	const prefix = "#/components/schemas/"
	if !strings.HasPrefix(ref, prefix) {
		return "", fmt.Errorf("%w: $ref %q is not a component schema", errSpec, ref)
	}
	return strings.TrimPrefix(ref, prefix), nil
}

// component returns a component schema node by name.
func (c *converter) component(name string) (*jnode, error) {
	n := c.comps.get(name)
	if n == nil {
		return nil, fmt.Errorf("%w: $ref to missing component %q", errSpec, name)
	}
	return n, nil
}

// resolve follows $refs to the schema node they name.
func (c *converter) resolve(n *jnode) (*jnode, string, error) {
	comp := ""
	for i := 0; n != nil && n.has("$ref"); i++ {
		if i > 50 {
			return nil, "", fmt.Errorf("%w: $ref cycle at %q", errSpec, comp)
		}
		name, err := refName(n.text("$ref"))
		if err != nil {
			return nil, "", err
		}
		if n, err = c.component(name); err != nil {
			return nil, "", err
		}
		comp = name
	}
	return n, comp, nil
}

// conv converts one schema node; where names it for messages. It reports whether
// the node allows null.
func (c *converter) conv(n *jnode, where string) (*term, bool, error) {
	if n == nil || n.kind != jObject {
		if n != nil && n.kind == jBool && n.bool {
			return c.use(c.scalar(kRaw)), false, nil // "true": anything
		}
		return nil, false, fmt.Errorf("%w: %s: schema is not an object", errSpec, where)
	}
	if n.has("$ref") {
		name, err := refName(n.text("$ref"))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", where, err)
		}
		r, ok := c.memo[name]
		if !ok {
			if c.busy[name] {
				c.warn("%s: recursive component %q kept raw", where, name)
				return c.use(c.scalar(kRaw)), true, nil
			}
			cn, err := c.component(name)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", where, err)
			}
			c.busy[name] = true
			t, null, err := c.convNode(cn, "#"+name, name)
			delete(c.busy, name)
			if err != nil {
				return nil, false, err
			}
			if t.where == "" {
				t.where = "#" + name
			}
			r = convResult{t, null}
			c.memo[name] = r
		}
		// A sibling of $ref may add null (OpenAPI 3.1 allows siblings).
		return c.use(r.t), r.nullable || typeHasNull(n), nil
	}
	t, null, err := c.convNode(n, where, "")
	if err != nil {
		return nil, false, err
	}
	if t.where == "" {
		t.where = where
	}
	return c.use(t), null, nil
}

func (c *converter) use(t *term) *term {
	t.uses++
	return t
}

// typeList returns the node's "type" as a list, and whether it includes "null".
func typeList(n *jnode) ([]string, bool) {
	v := n.get("type")
	if v == nil {
		return nil, false
	}
	var out []string
	null := false
	add := func(s string) {
		if s == "null" {
			null = true
		} else {
			out = append(out, s)
		}
	}
	switch v.kind {
	case jString:
		add(v.str)
	case jArray:
		for _, e := range v.elems {
			if e.kind == jString {
				add(e.str)
			}
		}
	}
	return out, null
}

func typeHasNull(n *jnode) bool {
	_, null := typeList(n)
	return null
}

// convNode converts a node that is not a $ref. comp is the component's name when
// the node is one.
func (c *converter) convNode(n *jnode, where, comp string) (*term, bool, error) {
	types, null := typeList(n)
	if e := n.get("enum"); e != nil && e.kind == jArray {
		for _, v := range e.elems {
			if v.kind == jNull {
				null = true
			}
		}
	}
	switch {
	case n.has("oneOf") || n.has("anyOf"):
		t, vnull, err := c.convOneOf(n, where, comp)
		return t, null || vnull, err
	case n.has("allOf"):
		t, anull, err := c.convAllOf(n, where, comp)
		return t, null || anull, err
	}
	if len(types) == 0 {
		switch {
		case n.has("properties"):
			types = []string{"object"}
		case n.has("items"):
			types = []string{"array"}
		case null:
			return c.scalar(kNull), true, nil
		default:
			return c.scalar(kRaw), false, nil // no constraint: any JSON
		}
	}
	if len(types) > 1 {
		// Several types without oneOf: a union of one node per type.
		u := c.newTerm(kUnion)
		u.title, u.comp, u.desc = n.text("title"), comp, n.text("description")
		for _, ty := range types {
			v, err := c.convTyped(n, ty, where+"|"+ty, "")
			if err != nil {
				return nil, false, err
			}
			u.variants = append(u.variants, c.use(v))
		}
		return u, null, nil
	}
	t, err := c.convTyped(n, types[0], where, comp)
	return t, null, err
}

// convTyped converts a node as the one JSON type ty.
func (c *converter) convTyped(n *jnode, ty, where, comp string) (*term, error) {
	switch ty {
	case "string":
		if e := n.get("enum"); e != nil {
			return c.enum(n, e, "", where, comp)
		}
		if n.text("format") == "date-time" {
			return c.scalar(kTimestamp), nil
		}
		return c.scalar(kString), nil
	case "integer":
		if e := n.get("enum"); e != nil {
			return c.enum(n, e, "int64", where, comp)
		}
		return c.scalar(kInt), nil
	case "number":
		return c.scalar(kFloat), nil
	case "boolean":
		return c.scalar(kBool), nil
	case "array":
		t := c.newTerm(kArray)
		items := n.get("items")
		if items == nil {
			t.elem = c.use(c.scalar(kRaw))
			return t, nil
		}
		elem, null, err := c.conv(items, where+"[]")
		if err != nil {
			return nil, err
		}
		t.elem, t.elemNull = elem, null
		return t, nil
	case "object":
		if props := n.get("properties"); props != nil && props.kind == jObject && len(props.keys) > 0 {
			return c.structOf(n, props, n.strings("required"), where, comp)
		}
		if ap := n.get("additionalProperties"); ap != nil && ap.kind == jObject && len(ap.keys) > 0 {
			v, null, err := c.conv(ap, where+"{}")
			if err != nil {
				return nil, err
			}
			t := c.newTerm(kMap)
			t.elem, t.elemNull = v, null
			return t, nil
		}
		return c.scalar(kFreeObject), nil
	case "null":
		return c.scalar(kNull), nil
	}
	return nil, fmt.Errorf("%w: %s: unknown type %q", errSpec, where, ty)
}

// enum converts an enum; e is the "enum" array. A null value is the field's
// nullability, not a value.
func (c *converter) enum(n, e *jnode, base, where, comp string) (*term, error) {
	if e.kind != jArray {
		return nil, fmt.Errorf("%w: %s: enum is not an array", errSpec, where)
	}
	t := c.newTerm(kEnum)
	t.base, t.title, t.comp, t.desc = base, n.text("title"), comp, n.text("description")
	if len(e.elems) > maxEnumValues {
		return nil, fmt.Errorf("%w: %s: enum of %d values, more than %d", errSpec, where, len(e.elems), maxEnumValues)
	}
	seen := map[string]bool{}
	for _, v := range e.elems {
		if v.kind == jNull {
			continue
		}
		s, ok := v.scalarText()
		if !ok {
			return nil, fmt.Errorf("%w: %s: enum value is not a scalar", errSpec, where)
		}
		if err := checkName("enum value", where, s); err != nil {
			return nil, err
		}
		if !seen[s] {
			seen[s] = true
			t.values = append(t.values, s)
		}
	}
	if len(t.values) == 0 {
		return c.scalar(kNull), nil
	}
	return t, nil
}

// structOf converts an object with properties.
func (c *converter) structOf(n, props *jnode, required []string, where, comp string) (*term, error) {
	t := c.newTerm(kStruct)
	t.title, t.comp, t.desc = n.text("title"), comp, n.text("description")
	t.reqList = n.has("required") || len(required) > 0
	req := map[string]bool{}
	for _, r := range required {
		req[r] = true
	}
	for i, k := range props.keys {
		if k == "" {
			// A JSON object may have the key "", but no Go field could be named for it.
			return nil, fmt.Errorf("%w: %s: a member without a name", errSpec, where)
		}
		if err := checkName("member name", where, k); err != nil {
			return nil, err
		}
		p := props.vals[i]
		ft, null, err := c.conv(p, where+"."+k)
		if err != nil {
			return nil, err
		}
		f := &tfield{key: k, t: ft, required: req[k], nullable: null}
		if p.kind == jObject {
			f.desc = p.text("description")
		}
		t.fields = append(t.fields, f)
		delete(req, k)
	}
	if len(req) > 0 {
		var missing []string
		for k := range req {
			missing = append(missing, k)
		}
		sort.Strings(missing)
		c.warn("%s: required members without a schema ignored: %s", where, strings.Join(missing, ", "))
	}
	return t, nil
}

// maxAllOfParts bounds the parts one allOf merges, its nested allOfs'
// included: the published spec's largest merges a handful.
const maxAllOfParts = 1000

// convAllOf merges the parts of an allOf into one struct: the members of all parts,
// required when any part requires them. A single part stands for itself.
func (c *converter) convAllOf(n *jnode, where, comp string) (*term, bool, error) {
	parts := n.get("allOf")
	if parts == nil || parts.kind != jArray || len(parts.elems) == 0 {
		return nil, false, fmt.Errorf("%w: %s: allOf is not a non-empty array", errSpec, where)
	}
	if len(parts.elems) == 1 && !n.has("properties") {
		if ref := parts.elems[0].text("$ref"); comp != "" && ref != "" {
			if name, err := refName(ref); err == nil && name == comp {
				return nil, false, fmt.Errorf("%w: %s: allOf refers to itself (through %q)", errSpec, where, comp)
			}
		}
		t, null, err := c.conv(parts.elems[0], where+"&0")
		if err != nil {
			return nil, false, err
		}
		t.uses-- // conv counted a use; the caller counts this one
		return t, null, nil
	}
	merged := &jnode{kind: jObject}
	props := &jnode{kind: jObject}
	var required []string
	title := n.text("title")
	// A part on the way down (open) that comes again is a cycle; visits
	// bounds the parts merged, so that allOfs that share parts cannot make
	// the merge exponential.
	open := map[*jnode]bool{n: true}
	visits := 0
	var add func(part *jnode) error
	add = func(part *jnode) error {
		part, ref, err := c.resolve(part)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if visits++; visits > maxAllOfParts {
			return fmt.Errorf("%w: %s: allOf merges more than %d parts", errSpec, where, maxAllOfParts)
		}
		if title == "" {
			title = part.text("title")
		}
		if sub := part.get("allOf"); sub != nil && sub.kind == jArray {
			if open[part] {
				return fmt.Errorf("%w: %s: allOf refers to itself (through %q)", errSpec, where, ref)
			}
			open[part] = true
			for _, p := range sub.elems {
				if err := add(p); err != nil {
					return err
				}
			}
			delete(open, part)
		}
		if pp := part.get("properties"); pp != nil && pp.kind == jObject {
			for i, k := range pp.keys {
				if j := indexOf(props.keys, k); j >= 0 {
					props.vals[j] = pp.vals[i] // a later part refines the member
				} else {
					props.keys = append(props.keys, k)
					props.vals = append(props.vals, pp.vals[i])
				}
			}
		}
		required = append(required, part.strings("required")...)
		return nil
	}
	for _, p := range parts.elems {
		if err := add(p); err != nil {
			return nil, false, err
		}
	}
	if pp := n.get("properties"); pp != nil {
		if err := add(&jnode{kind: jObject, keys: []string{"properties", "required"}, vals: []*jnode{pp, n.get("required")}}); err != nil {
			return nil, false, err
		}
	}
	merged.keys = []string{"title", "description"}
	merged.vals = []*jnode{{kind: jString, str: title}, {kind: jString, str: n.text("description")}}
	t, err := c.structOf(merged, props, required, where, comp)
	return t, false, err
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// convOneOf converts oneOf/anyOf: null alternatives make the value nullable, one
// remaining alternative stands for itself, an integer-or-date-time pair is a
// timestamp, and anything else is a union.
func (c *converter) convOneOf(n *jnode, where, comp string) (*term, bool, error) {
	key := "oneOf"
	if !n.has(key) {
		key = "anyOf"
	}
	alts := n.get(key)
	if alts == nil || alts.kind != jArray || len(alts.elems) == 0 {
		return nil, false, fmt.Errorf("%w: %s: %s is not a non-empty array", errSpec, where, key)
	}
	null := false
	var vs []*term
	for i, a := range alts.elems {
		v, vnull, err := c.conv(a, fmt.Sprintf("%s|%d", where, i))
		if err != nil {
			return nil, false, err
		}
		null = null || vnull
		if v.kind == kNull {
			v.uses--
			null = true
			continue
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return c.scalar(kNull), true, nil
	}
	// Timestamps the forge sends either as RFC 3339 text or as Unix seconds.
	if allKinds(vs, kTimestamp, kInt) && anyKind(vs, kTimestamp) {
		for _, v := range vs {
			v.uses--
		}
		return c.scalar(kTimestamp), null, nil
	}
	if len(vs) == 1 {
		vs[0].uses--
		return vs[0], null, nil
	}
	u := c.newTerm(kUnion)
	u.title, u.comp, u.desc = n.text("title"), comp, n.text("description")
	u.variants = vs
	return u, null, nil
}

func allKinds(ts []*term, kinds ...tkind) bool {
	for _, t := range ts {
		ok := false
		for _, k := range kinds {
			ok = ok || t.kind == k
		}
		if !ok {
			return false
		}
	}
	return true
}

func anyKind(ts []*term, k tkind) bool {
	for _, t := range ts {
		if t.kind == k {
			return true
		}
	}
	return false
}
