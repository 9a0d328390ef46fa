package importschema

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// exprOf writes a type in the schema's type-expression syntax.
func exprOf(e texpr) string {
	e = e.resolved()
	switch e.k {
	case kString:
		return "string"
	case kBool:
		return "bool"
	case kInt:
		return "int64"
	case kFloat:
		return "float64"
	case kTimestamp:
		return "timestamp"
	case kArray, kMap:
		star := ""
		if e.elemNull {
			star = "*"
		}
		prefix := "[]"
		if e.k == kMap {
			prefix = "map[string]"
		}
		return prefix + star + exprOf(*e.elem)
	case kStruct, kEnum, kUnion:
		return e.cls.name
	}
	return "raw" // kRaw, kFreeObject, kNull
}

// reachable returns the classes the payloads use, directly or not, by name.
func (m *model) reachable() []*class {
	var out []*class
	for cl := range m.reachableSet() {
		out = append(out, cl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// reachableSet returns the classes the payloads use, directly or not.
func (m *model) reachableSet() map[*class]bool {
	seen := map[*class]bool{}
	var visit func(e texpr)
	visitClass := func(cl *class) {
		if seen[cl] {
			return
		}
		seen[cl] = true
		for _, f := range cl.fields {
			visit(f.t)
		}
		for _, v := range cl.variants {
			visit(v)
		}
	}
	visit = func(e texpr) {
		e = e.resolved()
		if e.cls != nil {
			visitClass(e.cls)
		} else if e.elem != nil {
			visit(*e.elem)
		}
	}
	for _, h := range m.hooks {
		visitClass(h.body.cls.find())
	}
	return seen
}

// schema builds the model the YAML files hold.
func (m *model) schema(rec *record) *genmodel.Schema {
	s := &genmodel.Schema{}
	if rec != nil {
		s.Source = genmodel.Source{Package: rec.Package, Version: rec.Version, File: rec.File, SHA256: rec.SHA256}
	}
	byEvent := map[string][]*hook{}
	var events []string
	for _, h := range m.hooks {
		if byEvent[h.event] == nil {
			events = append(events, h.event)
		}
		byEvent[h.event] = append(byEvent[h.event], h)
	}
	sort.Strings(events)
	for _, name := range events {
		hs := byEvent[name]
		ev := genmodel.Event{Name: name, Description: cleanText(hs[0].summary)}
		for _, h := range hs {
			cl := h.body.cls.find()
			if h.action == "" {
				ev.Type = cl.name
				continue
			}
			ev.Actions = append(ev.Actions, genmodel.Action{Name: h.action, Description: cleanText(h.desc), Type: cl.name})
			if h.freeForm {
				ev.OtherActionsType = cl.name
			}
		}
		sort.Slice(ev.Actions, func(i, j int) bool { return ev.Actions[i].Name < ev.Actions[j].Name })
		s.Events = append(s.Events, ev)
	}

	// A payload type's description holds only what its event's or action's
	// description does not say already (how its shape was made): the generator
	// puts the two together, so the spec's text would otherwise appear twice.
	notes := map[*class][]string{}
	for _, h := range m.hooks {
		cl := h.body.cls.find()
		if notes[cl] == nil {
			notes[cl] = []string{}
		}
		if h.variants > 1 {
			notes[cl] = append(notes[cl], fmt.Sprintf("The spec gives this payload as one of %d shapes (a whole-body oneOf); "+
				"they are merged into this one struct, where members not in every shape are optional.", h.variants))
		}
		if h.freeForm {
			notes[cl] = append(notes[cl], fmt.Sprintf("The action is free-form: whoever triggers the delivery chooses it, "+
				"so any action may arrive with this payload; %q is the spec's sample.", h.action))
		}
	}

	for _, cl := range m.reachable() {
		t := genmodel.Type{Name: cl.name, Description: cleanText(cl.desc)}
		if ns, payload := notes[cl]; payload {
			t.Description = strings.Join(ns, "\n\n")
		}
		switch cl.kind {
		case kStruct:
			t.Kind = genmodel.KindStruct
			for _, f := range cl.fields {
				t.Fields = append(t.Fields, genmodel.Field{
					JSON: f.key, Description: cleanText(f.desc),
					Type: exprOf(f.t), Required: f.required, Nullable: f.nullable,
				})
			}
		case kEnum:
			t.Kind = genmodel.KindEnum
			if cl.base == "int64" {
				t.Base = "int64"
			}
			for _, v := range cl.values {
				t.Values = append(t.Values, genmodel.EnumValue{Value: v})
			}
		case kUnion:
			t.Kind = genmodel.KindUnion
			for i, v := range cl.variants {
				t.Variants = append(t.Variants, genmodel.Variant{Type: exprOf(v), Match: cl.matches[i]})
			}
		}
		s.Types = append(s.Types, t)
	}
	return s
}

// encodeSchema returns the text of events.yaml and types.yaml.
func encodeSchema(s *genmodel.Schema, header string) (events, types []byte, err error) {
	evDoc := struct {
		Source genmodel.Source  `yaml:"source"`
		Events []genmodel.Event `yaml:"events"`
	}{s.Source, s.Events}
	tyDoc := struct {
		Types []genmodel.Type `yaml:"types"`
	}{s.Types}
	var out [2][]byte
	for i, doc := range []any{evDoc, tyDoc} {
		var b bytes.Buffer
		b.WriteString(header)
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return nil, nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, nil, err
		}
		out[i] = b.Bytes()
	}
	return out[0], out[1], nil
}
