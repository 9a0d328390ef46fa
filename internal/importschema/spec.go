package importschema

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// errSpec marks a published spec the importer cannot read.
var errSpec = errors.New("unexpected spec")

// hook is one event.action (or action-less event) of the spec, with its payload.
type hook struct {
	key      string // the webhook's key in the spec, such as "issues-opened"
	event    string // x-github.subcategory, such as "issues"
	action   string // "" for an event without actions
	freeForm bool   // the action is free-form; action is the spec's sample name
	summary  string // about the event
	desc     string // about this action
	variants int    // >1 when the payload was a whole-body oneOf, merged into one struct
	body     *term  // the payload: a struct term; several hooks never share one
}

// name returns "event.action" or "event".
func (h *hook) name() string {
	if h.action == "" {
		return h.event
	}
	return h.event + "." + h.action
}

// readHooks converts every webhook of the spec. Its payload terms are fresh (never
// memoized), so that every event.action gets a struct of its own.
func readHooks(spec *jnode, c *converter) ([]*hook, error) {
	whs := spec.get("webhooks")
	if whs == nil || whs.kind != jObject || len(whs.keys) == 0 {
		return nil, fmt.Errorf("%w: no webhooks object", errSpec)
	}
	keys := append([]string(nil), whs.keys...)
	sort.Strings(keys)
	var hooks []*hook
	seen := map[string]string{}
	for _, key := range keys {
		post := whs.get(key).get("post")
		if post == nil {
			return nil, fmt.Errorf("%w: webhook %q has no post operation", errSpec, key)
		}
		// The spec writes a few events with hyphens ("sub-issues"); the forge's
		// event header, and every other event, use underscores ("sub_issues").
		event := strings.ReplaceAll(post.path("x-github").text("subcategory"), "-", "_")
		if event == "" {
			return nil, fmt.Errorf("%w: webhook %q has no x-github.subcategory", errSpec, key)
		}
		if err := checkName("event name", "webhook "+key, event); err != nil {
			return nil, err
		}
		schema := post.path("requestBody", "content", "application/json", "schema")
		if schema == nil {
			return nil, fmt.Errorf("%w: webhook %q has no application/json request body schema", errSpec, key)
		}
		hs, err := c.hooksOf(key, event, post, schema)
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			if prev, dup := seen[h.name()]; dup {
				return nil, fmt.Errorf("%w: webhooks %q and %q both give %s", errSpec, prev, key, h.name())
			}
			seen[h.name()] = key
			hooks = append(hooks, h)
		}
	}
	return hooks, nil
}

// hooksOf converts one webhook: one hook per action of its payload's action enum.
func (c *converter) hooksOf(key, event string, post, schema *jnode) ([]*hook, error) {
	node, comp, err := c.resolve(schema)
	if err != nil {
		return nil, fmt.Errorf("webhook %q: %w", key, err)
	}
	where := "webhook " + key
	var bodies []*term
	if alts := node.get("oneOf"); alts != nil && alts.kind == jArray && !node.has("properties") {
		// A whole-body oneOf: its variants become one struct (see mergeBodies).
		for i, a := range alts.elems {
			b, err := c.bodyStruct(a, fmt.Sprintf("%s|%d", where, i), "")
			if err != nil {
				return nil, err
			}
			bodies = append(bodies, b)
		}
	} else {
		b, err := c.bodyStruct(node, where, comp)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	if t := node.text("title"); t != "" {
		for _, b := range bodies {
			b.title = t
		}
	}

	// Actions: the union of the variants' action enums, or free-form.
	var actions []string
	freeForm := false
	for _, b := range bodies {
		f := b.field("action")
		switch {
		case f == nil:
		case f.t.kind == kEnum:
			for _, v := range f.t.values {
				if indexOf(actions, v) < 0 {
					actions = append(actions, v)
				}
			}
		case f.t.kind == kString:
			freeForm = true
		default:
			return nil, fmt.Errorf("%w: %s: action is neither an enum nor a string", errSpec, where)
		}
	}
	if freeForm {
		// The action is whatever the sender chose; the spec names its sample in the
		// operation ("repository-dispatch/sample.collected").
		op := post.text("operationId")
		i := strings.Index(op, "/")
		if len(actions) > 0 || i < 0 || i == len(op)-1 {
			return nil, fmt.Errorf("%w: %s: free-form action without a sample name in operationId %q", errSpec, where, op)
		}
		actions = []string{op[i+1:]}
	}
	sort.Strings(actions)
	for _, b := range bodies {
		b.setActionString(c.scalar(kString))
	}

	mk := func(action string, bs []*term) *hook {
		return &hook{
			key: key, event: event, action: action, freeForm: freeForm,
			summary: post.text("summary"), desc: post.text("description"),
			variants: len(bs), body: mergeBodies(c, bs),
		}
	}
	if len(actions) == 0 {
		return []*hook{mk("", bodies)}, nil
	}
	var out []*hook
	for i, a := range actions {
		bs := bodies
		if i > 0 {
			bs = nil
			for _, b := range bodies {
				bs = append(bs, c.cloneStruct(b))
			}
		}
		out = append(out, mk(a, bs))
	}
	return out, nil
}

// bodyStruct converts a payload schema to a fresh struct term.
func (c *converter) bodyStruct(n *jnode, where, comp string) (*term, error) {
	node, rcomp, err := c.resolve(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if rcomp != "" {
		comp = rcomp
	}
	var t *term
	switch {
	case node.has("properties"):
		t, err = c.structOf(node, node.get("properties"), node.strings("required"), where, comp)
	case node.has("allOf"):
		t, _, err = c.convAllOf(node, where, comp)
	default:
		return nil, fmt.Errorf("%w: %s: payload is not an object with properties", errSpec, where)
	}
	if err != nil {
		return nil, err
	}
	if t.kind != kStruct {
		return nil, fmt.Errorf("%w: %s: payload is not an object", errSpec, where)
	}
	return t, nil
}

// field returns a struct term's member, or nil.
func (t *term) field(key string) *tfield {
	for _, f := range t.fields {
		if f.key == key {
			return f
		}
	}
	return nil
}

// setActionString makes a payload's "action" a plain string: each event.action has
// a struct of its own, so a one-value enum per action would only add noise.
func (t *term) setActionString(str *term) {
	if f := t.field("action"); f != nil {
		nf := *f
		nf.t = str
		for i, g := range t.fields {
			if g == f {
				t.fields[i] = &nf
			}
		}
	}
}

// cloneStruct copies a payload struct so that another action gets its own.
func (c *converter) cloneStruct(t *term) *term {
	n := c.newTerm(kStruct)
	id := n.id
	*n = *t
	n.id = id
	n.fields = append([]*tfield(nil), t.fields...)
	return n
}

// mergeBodies marks the payload terms of one event.action; several (a whole-body
// oneOf) are merged by putting them in one class, whose definition is the join of
// its members: members not in every variant become optional.
func mergeBodies(c *converter, bs []*term) *term {
	for _, b := range bs[1:] {
		b.mergeWith = bs[0]
	}
	return bs[0]
}
