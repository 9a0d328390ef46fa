package importschema

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// class is a set of terms that become one named type. Terms join a class when their
// shapes are identical (exact merge), when they carry the same family name (a title
// or component name), or when they sit at the same member of one class
// (congruence: the "owner" of every Repository is one type).
type class struct {
	id      int // the smallest member id: deterministic
	kind    tkind
	members []*term
	fwd     *class // set when merged into another class
	body    string // the event.action of a payload class
	synth   bool   // made by a join, with no member terms

	// The definition: the join of the members.
	state    int // 0 not computed, 1 computing, 2 done
	fields   []*cfield
	values   []string
	base     string
	variants []texpr
	alias    *texpr // a union that collapsed to one type
	desc     string

	origin  string // for a union made by a join: the member joined
	name    string
	matches []genmodel.Match
	notes   []string // appended to the type's description
}

// texpr is a type after classing: a scalar kind, an array or map, or a class.
type texpr struct {
	k        tkind
	cls      *class // kStruct, kEnum, kUnion
	elem     *texpr // kArray, kMap
	elemNull bool
}

// cfield is a member of a class's struct definition.
type cfield struct {
	key      string
	t        texpr
	required bool
	nullable bool
	desc     string
	// usually reports that most members that have the key require it: a weaker
	// "required" that is still good for telling union variants apart.
	usually bool
}

// model is the classed spec: every class, and the payload of every hook.
type model struct {
	conv    *converter
	hooks   []*hook
	classes []*class // live classes, by id once build has run
	synth   map[string]*class
	nextID  int
	keys    map[*term]string
	joining string // the member being joined, for messages
	warn    func(string, ...any)
	stats   stats
	// lenient leaves unions the importer cannot tell apart undecided instead of
	// failing: a server variant's import only asks which members exist.
	lenient bool
	// freeForm are the unions (by place) that overrides keep as free-form
	// objects; computeMatches sets each one it used.
	freeForm map[string]*bool
}

// stats are the figures the importer reports.
type stats struct {
	objectNodes int // object schemas with members, payloads aside (each component once)
	exactShapes int // distinct shapes among them
}

func (cl *class) find() *class {
	for cl.fwd != nil {
		cl = cl.fwd
	}
	return cl
}

// buildModel groups the converter's terms into classes and defines each class.
func buildModel(c *converter, hooks []*hook, warn func(string, ...any)) (*model, error) {
	m := &model{conv: c, hooks: hooks, synth: map[string]*class{}, keys: map[*term]string{}, warn: warn}
	for _, h := range hooks {
		h.body.body = h.name()
	}
	for _, t := range c.terms {
		t.cls = &class{id: t.id, kind: t.kind, members: []*term{t}, body: t.body}
		if t.mergeWith != nil {
			t.cls.body = "variant" // never merged with anything but its payload
		}
		if t.kind == kStruct && t.body == "" && t.mergeWith == nil {
			m.stats.objectNodes++
		}
		if t.id > m.nextID {
			m.nextID = t.id
		}
	}
	for _, t := range c.terms {
		if t.mergeWith != nil {
			m.union(t.mergeWith.cls, t.cls)
		}
	}

	// Distinct shapes, counted here; they are merged once every class is defined
	// (minimize), so that two identical small shapes from unrelated places cannot
	// chain unrelated types together through the joins below.
	shapes := map[string]bool{}
	for _, t := range c.terms {
		if t.kind == kStruct && t.cls.body == "" {
			shapes[m.shapeKey(t)] = true
		}
	}
	m.stats.exactShapes = len(shapes)

	// Families: one type per title (or component name, for untitled components),
	// when the shapes are alike: a title such as "pull_request" on a repository
	// rule says nothing about pull requests.
	type group struct {
		cl   *class
		keys map[string]bool
	}
	fam := map[string][]*group{}
	byName := map[string][]*group{} // struct families by the name they give
	join := func(groups []*group, t *term) bool {
		keys := memberKeys(t)
		for _, g := range groups {
			if alike(g.keys, keys) {
				m.union(g.cl, t.cls)
				for key := range keys {
					g.keys[key] = true
				}
				return true
			}
		}
		return false
	}
	for _, t := range c.terms {
		if t.cls.body != "" {
			continue
		}
		f := familyKey(t)
		if f == "" {
			continue
		}
		k := fmt.Sprint(t.kind, ":", f)
		if !join(fam[k], t) {
			g := &group{cl: t.cls, keys: memberKeys(t)}
			fam[k] = append(fam[k], g)
			if t.kind == kStruct {
				name := familyName(t)
				byName[name] = append(byName[name], g)
			}
		}
	}
	// An untitled object at member "permissions" of an "App" is an AppPermissions,
	// when a family of that name exists and the shapes are alike.
	for _, t := range c.terms {
		if t.kind != kStruct || t.cls.body != "" || familyName(t) == "" {
			continue
		}
		for _, f := range t.fields {
			u, elem := f.t, false
			for u.kind == kArray || u.kind == kMap {
				u, elem = u.elem, true
			}
			if u.kind == kStruct && familyKey(u) == "" && u.cls.body == "" {
				join(byName[joinName(familyName(t), keyName(f.key, elem))], u)
			}
		}
	}
	// What the actions of one event carry at the same member is one type, when
	// alike: every issues.* payload's "issue" is an Issue; the "changes" of
	// issues.edited and issues.transferred have nothing in common and stay apart.
	events := map[string][]*term{}
	var order []string
	for _, h := range hooks {
		if events[h.event] == nil {
			order = append(order, h.event)
		}
		events[h.event] = append(events[h.event], h.body)
	}
	for _, ev := range order {
		first := map[string]*term{}
		for _, b := range events[ev] {
			for _, f := range b.fields {
				if prev, ok := first[f.key]; ok {
					m.alignAlike(prev, f.t)
				} else {
					first[f.key] = f.t
				}
			}
		}
	}

	m.closure()
	m.classes = m.live()
	for _, cl := range m.classes {
		if err := m.define(cl); err != nil {
			return nil, err
		}
	}
	m.minimize()
	m.classes = m.live() // with the unions joins made, without the merged
	return m, nil
}

// minimize merges classes whose definitions are identical (descriptions aside),
// until none are: the exact merge of identical shapes, done on definitions.
func (m *model) minimize() {
	for {
		byKey := map[string]*class{}
		merged := false
		for _, cl := range m.live() {
			if cl.body != "" || cl.alias != nil {
				continue
			}
			k := cl.defKey()
			if first, ok := byKey[k]; ok {
				m.union(first, cl)
				merged = true
			} else {
				byKey[k] = cl
			}
		}
		if !merged {
			return
		}
	}
}

// defKey identifies a class's definition by content.
func (cl *class) defKey() string {
	var parts []string
	switch cl.kind {
	case kStruct:
		for _, f := range cl.fields {
			parts = append(parts, fmt.Sprintf("%q:%v%v%s", f.key, f.required, f.nullable, f.t.key()))
		}
		sort.Strings(parts)
	case kEnum:
		parts = append([]string{cl.base}, cl.values...)
		sort.Strings(parts[1:])
	case kUnion:
		for _, v := range cl.variants {
			parts = append(parts, v.key())
		}
		sort.Strings(parts)
	}
	return fmt.Sprintf("%d%q", cl.kind, parts)
}

// live returns the classes not merged away, by id.
func (m *model) live() []*class {
	seen := map[*class]bool{}
	var out []*class
	for _, t := range m.conv.terms {
		if cl := t.cls.find(); !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	for _, cl := range m.synth {
		if cl = cl.find(); !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// union merges two classes; the one with the smaller id survives. It reports
// whether anything changed.
func (m *model) union(a, b *class) bool {
	a, b = a.find(), b.find()
	if a == b {
		return false
	}
	if a.kind != b.kind {
		return false // never: every caller merges like with like
	}
	if b.id < a.id {
		a, b = b, a
	}
	for _, t := range b.members {
		t.cls = a
	}
	a.members = append(a.members, b.members...)
	if a.body == "" || a.body == "variant" {
		a.body = b.body
	}
	a.synth = a.synth && b.synth
	if a.desc == "" {
		a.desc = b.desc
	}
	b.members, b.fwd = nil, a
	return true
}

// shapeKey identifies a term's shape: members, their types, required and nullable;
// never descriptions, titles, examples or formats other than date-time.
func (m *model) shapeKey(t *term) string {
	if k, ok := m.keys[t]; ok {
		return k
	}
	var b strings.Builder
	switch t.kind {
	case kArray, kMap:
		b.WriteString(map[tkind]string{kArray: "[", kMap: "{"}[t.kind])
		if t.elemNull {
			b.WriteString("?")
		}
		b.WriteString(m.shapeKey(t.elem))
	case kStruct:
		parts := make([]string, len(t.fields))
		for i, f := range t.fields {
			parts[i] = fmt.Sprintf("%q:%v%v%s", f.key, f.required, f.nullable, m.shapeKey(f.t))
		}
		sort.Strings(parts)
		b.WriteString("S" + strings.Join(parts, ","))
	case kEnum:
		vs := append([]string(nil), t.values...)
		sort.Strings(vs)
		fmt.Fprintf(&b, "E%s%q", t.base, vs)
	case kUnion:
		parts := make([]string, len(t.variants))
		for i, v := range t.variants {
			parts[i] = m.shapeKey(v)
		}
		sort.Strings(parts)
		b.WriteString("U" + strings.Join(parts, ","))
	default:
		fmt.Fprintf(&b, "k%d", t.kind)
	}
	k := b.String()
	if t.kind.named() {
		sum := sha256.Sum256([]byte(k))
		k = "#" + hex.EncodeToString(sum[:10])
	}
	m.keys[t] = k
	return k
}

// closure merges classes until congruent: for every class, terms at the same member
// (or union variants of the same JSON kind) are in one class.
func (m *model) closure() {
	for changed := true; changed; {
		changed = false
		for _, cl := range m.live() {
			members := append([]*term(nil), cl.members...)
			if len(members) < 2 {
				continue
			}
			switch cl.kind {
			case kStruct:
				// The first term of each kind at each member: others align with it.
				type slot struct{ key, sig string }
				at := map[slot]*term{}
				for _, t := range members {
					for _, f := range t.fields {
						sig, leaf := kindSig(f.t)
						sl := slot{f.key, sig + leaf}
						if prev, ok := at[sl]; ok {
							changed = m.align(prev, f.t) || changed
						} else {
							at[sl] = f.t
						}
						// A struct also aligns with a union's one object variant.
						if leaf == "S" || leaf == "U" {
							other := slot{f.key, sig + map[string]string{"S": "U", "U": "S"}[leaf]}
							if prev, ok := at[other]; ok {
								changed = m.align(prev, f.t) || changed
							}
						}
					}
				}
			case kUnion:
				first := members[0]
				for _, t := range members[1:] {
					for _, v := range t.variants {
						if w := soleVariant(first, jsonKindOf(v)); w != nil && soleVariant(t, jsonKindOf(v)) == v {
							changed = m.align(w, v) || changed
						}
					}
				}
			}
		}
	}
}

// align merges the classes of two terms found at the same place.
func (m *model) align(a, b *term) bool {
	switch {
	case a.kind.named() && a.kind == b.kind:
		if a.cls.find().body != "" || b.cls.find().body != "" {
			return false
		}
		return m.union(a.cls, b.cls)
	case a.kind == b.kind && (a.kind == kArray || a.kind == kMap):
		return m.align(a.elem, b.elem)
	case a.kind == kStruct && b.kind == kUnion:
		if v := soleVariant(b, "object"); v != nil && v.kind == kStruct {
			return m.align(a, v)
		}
	case a.kind == kUnion && b.kind == kStruct:
		return m.align(b, a)
	}
	return false
}

// jsonKindOf is the JSON kind a term's values have, for telling union variants apart.
func jsonKindOf(t *term) string {
	if t.kind == kTimestamp {
		return "string" // a term's timestamp is the spec's date-time string
	}
	return cmp.Or(valueKind(t.kind, t.base), "any")
}

// soleVariant returns a union term's only variant of a JSON kind, or nil.
func soleVariant(u *term, kind string) *term {
	var found *term
	for _, v := range u.variants {
		if jsonKindOf(v) == kind {
			if found != nil {
				return nil
			}
			found = v
		}
	}
	return found
}

// texprOf converts a term to the type it denotes after classing.
func texprOf(t *term) texpr {
	switch t.kind {
	case kArray, kMap:
		e := texprOf(t.elem)
		return texpr{k: t.kind, elem: &e, elemNull: t.elemNull}
	case kStruct, kEnum, kUnion:
		return texpr{k: t.kind, cls: t.cls.find()}
	}
	return texpr{k: t.kind}
}

// resolved follows a collapsed union to what it stands for.
func (e texpr) resolved() texpr {
	for e.cls != nil {
		cl := e.cls.find()
		if cl.alias == nil {
			return texpr{k: e.k, cls: cl}
		}
		e = *cl.alias
	}
	return e
}

func (e texpr) equal(o texpr) bool {
	e, o = e.resolved(), o.resolved()
	if e.k != o.k || e.cls != o.cls || e.elemNull != o.elemNull {
		return false
	}
	if e.elem != nil {
		return e.elem.equal(*o.elem)
	}
	return true
}

// key identifies a texpr, for finding equal joins.
func (e texpr) key() string {
	e = e.resolved()
	switch {
	case e.cls != nil:
		return fmt.Sprintf("c%d", e.cls.id)
	case e.elem != nil:
		null := ""
		if e.elemNull {
			null = "*"
		}
		return fmt.Sprintf("%d%s(%s)", e.k, null, e.elem.key())
	}
	return fmt.Sprintf("k%d", e.k)
}

// define computes a class's definition from its members.
func (m *model) define(cl *class) error {
	cl = cl.find()
	switch cl.state {
	case 2:
		return nil
	case 1:
		return fmt.Errorf("%w: a union contains itself (class %d)", errSpec, cl.id)
	}
	cl.state = 1
	defer func() { cl.state = 2 }()
	members := append([]*term(nil), cl.members...)
	sort.SliceStable(members, func(i, j int) bool {
		if members[i].uses != members[j].uses {
			return members[i].uses > members[j].uses
		}
		return members[i].id < members[j].id
	})
	for _, t := range members {
		if cl.desc == "" {
			cl.desc = t.desc
		}
	}
	switch cl.kind {
	case kEnum:
		// The fullest list first, so that values keep the spec's order.
		sort.SliceStable(members, func(i, j int) bool { return len(members[i].values) > len(members[j].values) })
		for _, t := range members {
			if t.base != "" {
				cl.base = t.base
			}
			for _, v := range t.values {
				if indexOf(cl.values, v) < 0 {
					cl.values = append(cl.values, v)
				}
			}
		}
	case kUnion:
		var vs []texpr
		for _, t := range members {
			for _, v := range t.variants {
				vs = append(vs, texprOf(v))
			}
		}
		out, err := m.normalize(vs)
		if err != nil {
			return err
		}
		if len(out) == 1 {
			cl.alias = &out[0]
		}
		cl.variants = out
	case kStruct:
		var order []string
		byKey := map[string][]*tfield{}
		for _, t := range members {
			for _, f := range t.fields {
				if _, ok := byKey[f.key]; !ok {
					order = append(order, f.key)
				}
				byKey[f.key] = append(byKey[f.key], f)
			}
		}
		// A copy of a shape with no "required" list at all says nothing about
		// which members are required (the spec leaves it out on a few inline
		// copies); only copies with a list vote, when there are any.
		voters := map[*tfield]bool{}
		anyList := false
		for _, t := range members {
			anyList = anyList || t.reqList
		}
		for _, t := range members {
			if t.reqList || !anyList {
				for _, f := range t.fields {
					voters[f] = true
				}
			}
		}
		for _, k := range order {
			fs := byKey[k]
			f := &cfield{key: k, required: len(fs) == len(members)}
			var t texpr
			nreq := 0
			for i, tf := range fs {
				if tf.required {
					nreq++
				}
				if voters[tf] {
					f.required = f.required && tf.required
				}
				f.nullable = f.nullable || tf.nullable || tf.t.kind == kNull
				if f.desc == "" {
					f.desc = tf.desc
				}
				e := texprOf(tf.t)
				if i == 0 {
					t = e
					continue
				}
				var err error
				m.joining = fmt.Sprintf("%s.%s", cl.where(), k)
				if t, err = m.join(t, e); err != nil {
					return fmt.Errorf("member %q: %w", k, err)
				}
			}
			if t.k == kNull {
				t, f.nullable = texpr{k: kRaw}, true
			}
			f.usually = 2*nreq > len(fs)
			f.t = t
			cl.fields = append(cl.fields, f)
		}
	}
	return nil
}

// join returns a type that holds the values of both a and b.
func (m *model) join(a, b texpr) (texpr, error) {
	a, b = a.resolved(), b.resolved()
	switch {
	case a.equal(b):
		return a, nil
	case a.k == kNull:
		return b, nil
	case b.k == kNull:
		return a, nil
	case a.k == b.k && (a.k == kArray || a.k == kMap):
		e, err := m.join(*a.elem, *b.elem)
		if err != nil {
			return texpr{}, err
		}
		return texpr{k: a.k, elem: &e, elemNull: a.elemNull || b.elemNull}, nil
	}
	vs, err := m.normalize([]texpr{a, b})
	if err != nil {
		return texpr{}, err
	}
	if len(vs) == 1 {
		return vs[0], nil
	}
	// A union already holding exactly these variants stands for itself.
	for _, x := range []texpr{a, b} {
		if x.k == kUnion && sameVariants(x.cls.variants, vs) {
			return x, nil
		}
	}
	return m.synthUnion(vs), nil
}

func sameVariants(a, b []texpr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(b[i]) {
			return false
		}
	}
	return true
}

// synthUnion returns the class of a union made by a join, one per variant list.
func (m *model) synthUnion(vs []texpr) texpr {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = v.key()
	}
	k := strings.Join(keys, "|")
	if cl, ok := m.synth[k]; ok {
		return texpr{k: kUnion, cls: cl.find()}
	}
	m.nextID++
	cl := &class{id: 1_000_000 + m.nextID, kind: kUnion, synth: true, variants: vs, state: 2, origin: m.joining}
	m.synth[k] = cl
	return texpr{k: kUnion, cls: cl}
}

// normalize turns a list of alternatives into a union's variants: nested unions
// spliced in, duplicates dropped, and alternatives that another one already holds
// folded into it (an integer into a number or timestamp, a string into an enum or
// timestamp, a free-form object into a struct or map; anything into raw).
func (m *model) normalize(in []texpr) ([]texpr, error) {
	var flat []texpr
	var add func(e texpr) error
	add = func(e texpr) error {
		e = e.resolved()
		if e.k == kUnion {
			if err := m.define(e.cls); err != nil {
				return err
			}
			if e.cls.alias != nil {
				return add(*e.cls.alias)
			}
			for _, v := range e.cls.variants {
				if err := add(v); err != nil {
					return err
				}
			}
			return nil
		}
		if e.k == kNull {
			return nil
		}
		for _, f := range flat {
			if f.equal(e) {
				return nil
			}
		}
		flat = append(flat, e)
		return nil
	}
	for _, e := range in {
		if err := add(e); err != nil {
			return nil, err
		}
	}
	has := func(k tkind) bool {
		for _, f := range flat {
			if f.k == k {
				return true
			}
		}
		return false
	}
	drop := func(k tkind) {
		out := flat[:0]
		for _, f := range flat {
			if f.k != k {
				out = append(out, f)
			}
		}
		flat = out
	}
	if has(kRaw) {
		return []texpr{{k: kRaw}}, nil
	}
	if has(kInt) && (has(kFloat) || has(kTimestamp)) {
		drop(kInt)
	}
	if has(kString) && (has(kEnum) || has(kTimestamp)) {
		drop(kString)
	}
	if has(kFreeObject) && (has(kStruct) || has(kMap)) {
		drop(kFreeObject)
	}
	// Several arrays become one array of the join of their elements.
	var arr *texpr
	out := flat[:0]
	for _, f := range flat {
		if f.k != kArray {
			out = append(out, f)
			continue
		}
		if arr == nil {
			a := f
			arr = &a
			out = append(out, f)
			continue
		}
		j, err := m.join(*arr, f)
		if err != nil {
			return nil, err
		}
		*arr = j
	}
	flat = out
	for i, f := range flat {
		if f.k == kArray {
			flat[i] = *arr
		}
	}
	if len(flat) == 0 {
		return []texpr{{k: kNull}}, nil
	}
	return flat, nil
}

// familyKey is what puts terms in one family: the title as written (lower-cased),
// else the component name.
func familyKey(t *term) string {
	if t.title != "" {
		return "t:" + strings.ToLower(strings.TrimSpace(t.title))
	}
	if t.comp != "" {
		return "c:" + t.comp
	}
	return ""
}

// memberKeys returns a struct's member keys, an enum's values, or a union's
// variant kinds: what alike compares.
func memberKeys(t *term) map[string]bool {
	out := map[string]bool{}
	for _, f := range t.fields {
		out[f.key] = true
	}
	for _, v := range t.values {
		out[v] = true
	}
	for _, v := range t.variants {
		out[jsonKindOf(v)] = true
	}
	return out
}

// alike reports whether two shapes share at least half the keys of the smaller.
func alike(a, b map[string]bool) bool {
	n := 0
	for k := range b {
		if a[k] {
			n++
		}
	}
	return 2*n >= min(len(a), len(b))
}

// kindSig describes a term's containers ("[" for arrays, "{" for maps) and its
// leaf kind, so that closure aligns only like with like.
func kindSig(t *term) (containers, leaf string) {
	for t.kind == kArray || t.kind == kMap {
		containers += map[tkind]string{kArray: "[", kMap: "{"}[t.kind]
		t = t.elem
	}
	switch t.kind {
	case kStruct:
		return containers, "S"
	case kEnum:
		return containers, "E"
	case kUnion:
		return containers, "U"
	}
	return containers, fmt.Sprint(t.kind)
}

// alignAlike aligns like align, but objects (and enums) only when alike.
func (m *model) alignAlike(a, b *term) {
	for (a.kind == kArray || a.kind == kMap) && a.kind == b.kind {
		a, b = a.elem, b.elem
	}
	if a.kind == b.kind && (a.kind == kStruct || a.kind == kEnum) {
		if !alike(memberKeys(a), memberKeys(b)) {
			return
		}
	}
	m.align(a, b)
}
