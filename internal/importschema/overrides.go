package importschema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// overrides are the hand-kept patches of schema/overrides.yaml. Every entry says
// why in Reason. The importer applies them to what it read from the spec and warns
// about each one that changed nothing (the spec caught up, or a name moved).
type overrides struct {
	// Names adds event.action names the spec lacks, with the payload of another
	// action of the same event.
	Names []nameOverride `yaml:"names"`
	// Renames replaces an automatic type name.
	Renames []renameOverride `yaml:"renames"`
	// FieldNames gives the Go name of every member with an awkward JSON key.
	FieldNames []fieldNameOverride `yaml:"field_names"`
	// EnumValues adds values to an enum.
	EnumValues []enumOverride `yaml:"enum_values"`
	// Types adds named types the spec lacks (for Fields entries to use).
	Types []typeOverride `yaml:"types"`
	// Fields changes (or adds) one member of a struct.
	Fields []fieldOverride `yaml:"fields"`
	// Optional makes members of a struct optional: the spec requires them, real
	// payloads lack them.
	Optional []optionalOverride `yaml:"optional"`
	// Required makes members of a struct required: a few minimal copies of a shape
	// in the spec leave them optional, so the joined type would.
	Required []optionalOverride `yaml:"required"`
	// FreeForm keeps a union of objects that nothing in them tells apart as a
	// free-form object, where the importer would otherwise stop.
	FreeForm []freeFormOverride `yaml:"free_form"`
	// Events adds events the spec lacks (known from another of the forge's
	// publications), each action with a copy of a Types entry as its payload.
	Events []eventOverride `yaml:"events"`
}

type eventOverride struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Actions     []string `yaml:"actions"`
	Type        string   `yaml:"type"` // a Types entry, copied for each action (and then dropped)
	Reason      string   `yaml:"reason"`
}

type freeFormOverride struct {
	At     string `yaml:"at"` // the union's place, as the importer's message names it: "#exemption-request.metadata"
	Reason string `yaml:"reason"`
}

type typeOverride struct {
	genmodel.Type `yaml:",inline"`
	Reason        string `yaml:"reason"`
}

type optionalOverride struct {
	In   string   `yaml:"in"`
	JSON []string `yaml:"json"`
	// OlderSpecs marks an entry for older published versions of the spec:
	// where the spec already says so, or lacks the member, it is no
	// warning (the project's tests pass at every version the importer
	// accepts).
	OlderSpecs bool   `yaml:"older_specs"`
	Reason     string `yaml:"reason"`
}

type nameOverride struct {
	Name string `yaml:"name"` // event.action, or event.* for the actions the spec does not list
	Like string `yaml:"like"` // event.action whose payload it shares
	// OlderSpecs marks an entry for older published versions of the spec:
	// where the spec has the name already, it is no warning.
	OlderSpecs bool   `yaml:"older_specs"`
	Reason     string `yaml:"reason"`
}

type renameOverride struct {
	From   string `yaml:"from"`
	To     string `yaml:"to"`
	Reason string `yaml:"reason"`
}

type fieldNameOverride struct {
	JSON   string `yaml:"json"`
	Name   string `yaml:"name"`
	Reason string `yaml:"reason"`
}

type enumOverride struct {
	In     string   `yaml:"in"`
	Add    []string `yaml:"add"`
	Reason string   `yaml:"reason"`
}

type fieldOverride struct {
	In          string `yaml:"in"`
	JSON        string `yaml:"json"`
	Type        string `yaml:"type,omitempty"`
	Required    *bool  `yaml:"required,omitempty"`
	Nullable    *bool  `yaml:"nullable,omitempty"`
	Description string `yaml:"description,omitempty"`
	Reason      string `yaml:"reason"`
}

// errOverride marks an override file the importer cannot apply.
var errOverride = errors.New("bad override")

func readOverrides(path string) (*overrides, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o, err := parseOverridesAt(path, data)
	if err != nil && !strings.Contains(err.Error(), path+":") {
		err = fmt.Errorf("%s: %w", path, err) // a syntax error names path:line already
	}
	return o, err
}

// parseOverrides reads the overrides file's text; errors name it "overrides.yaml"
// (readOverrides names the file it read).
func parseOverrides(data []byte) (*overrides, error) {
	return parseOverridesAt("overrides.yaml", data)
}

func parseOverridesAt(path string, data []byte) (*overrides, error) {
	var o overrides
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&o); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", errOverride, yamlError(path, data, err))
	}
	var missing []string
	check := func(what, reason string) {
		if strings.TrimSpace(reason) == "" {
			missing = append(missing, what)
		}
	}
	for _, n := range o.Names {
		check("names "+n.Name, n.Reason)
		if n.Name == "" || n.Like == "" {
			return nil, fmt.Errorf("%w: names entry needs name and like", errOverride)
		}
	}
	for _, r := range o.Renames {
		check("renames "+r.From, r.Reason)
		if r.From == "" || r.To == "" {
			return nil, fmt.Errorf("%w: renames entry needs from and to", errOverride)
		}
	}
	for _, f := range o.FieldNames {
		check("field_names "+f.JSON, f.Reason)
		if f.JSON == "" || f.Name == "" {
			return nil, fmt.Errorf("%w: field_names entry needs json and name", errOverride)
		}
	}
	for _, e := range o.EnumValues {
		check("enum_values "+e.In, e.Reason)
		if e.In == "" || len(e.Add) == 0 {
			return nil, fmt.Errorf("%w: enum_values entry needs in and add", errOverride)
		}
	}
	for _, f := range o.Fields {
		check("fields "+f.In+"."+f.JSON, f.Reason)
		if f.In == "" || f.JSON == "" {
			return nil, fmt.Errorf("%w: fields entry needs in and json", errOverride)
		}
		if f.Type != "" {
			if _, err := genmodel.ParseTypeExpr(f.Type); err != nil {
				return nil, fmt.Errorf("%w: fields %s.%s: %v", errOverride, f.In, f.JSON, err)
			}
		}
	}
	for _, t := range o.Types {
		check("types "+t.Name, t.Reason)
		if t.Name == "" || t.Kind == "" {
			return nil, fmt.Errorf("%w: types entry needs name and kind", errOverride)
		}
	}
	for kind, list := range map[string][]optionalOverride{"optional": o.Optional, "required": o.Required} {
		for _, op := range list {
			check(kind+" "+op.In, op.Reason)
			if op.In == "" || len(op.JSON) == 0 {
				return nil, fmt.Errorf("%w: %s entry needs in and json", errOverride, kind)
			}
		}
	}
	for _, e := range o.Events {
		check("events "+e.Name, e.Reason)
		if e.Name == "" || e.Type == "" || len(e.Actions) == 0 {
			return nil, fmt.Errorf("%w: events entry needs name, actions and type", errOverride)
		}
	}
	for _, f := range o.FreeForm {
		check("free_form "+f.At, f.Reason)
		if f.At == "" {
			return nil, fmt.Errorf("%w: free_form entry needs at", errOverride)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: every entry needs a reason; missing in %s", errOverride, strings.Join(missing, "; "))
	}
	return &o, nil
}

// renameMap returns the renames as automatic name → wanted name.
func (o *overrides) renameMap() map[string]string {
	m := map[string]string{}
	for _, r := range o.Renames {
		m[r.From] = r.To
	}
	return m
}

// apply patches the schema (all but renames, which naming applies) and returns a
// warning for every entry that changed nothing.
func (o *overrides) apply(s *genmodel.Schema, renamed map[string]bool) ([]string, error) {
	var warns []string
	noop := func(format string, args ...any) {
		warns = append(warns, "override has no effect: "+fmt.Sprintf(format, args...))
	}
	for _, r := range o.Renames {
		if !renamed[r.From] {
			return nil, fmt.Errorf("%w: renames %s: no type is named %s (nor has the name %s from the lock)", errOverride, r.From, r.From, r.To)
		}
	}
	types := map[string]*genmodel.Type{}
	index := func() {
		clear(types)
		for i := range s.Types {
			types[s.Types[i].Name] = &s.Types[i]
		}
	}
	index()

	for _, n := range o.Names {
		ev, act, ok := strings.Cut(n.Name, ".")
		lev, lact, lok := strings.Cut(n.Like, ".")
		if !ok || !lok || ev != lev {
			return nil, fmt.Errorf("%w: names %s like %s: both must be event.action of one event", errOverride, n.Name, n.Like)
		}
		e := findEvent(s, ev)
		if e == nil {
			return nil, fmt.Errorf("%w: names %s: no event %s", errOverride, n.Name, ev)
		}
		if act == "*" && e.OtherActionsType != "" || act != "*" && findAction(e, act) != nil {
			if !n.OlderSpecs {
				noop("names %s: the spec has it now", n.Name)
			}
			continue
		}
		like := findAction(e, lact)
		if like == nil {
			return nil, fmt.Errorf("%w: names %s: no action %s to copy", errOverride, n.Name, n.Like)
		}
		if act == "*" {
			// Actions the spec does not list (free-form ones) get its payload.
			e.OtherActionsType = like.Type
			continue
		}
		src := types[like.Type]
		t := cloneType(*src)
		t.Name = payloadTypeName(ev, act)
		if types[t.Name] != nil {
			return nil, fmt.Errorf("%w: names %s: type %s exists", errOverride, n.Name, t.Name)
		}
		// The action's description gives the reason; the type says where its shape came from.
		t.Description = fmt.Sprintf("It has the same shape as %s (from overrides).", like.Type)
		s.Types = append(s.Types, t)
		e.Actions = append(e.Actions, genmodel.Action{Name: act, Description: strings.TrimSpace(n.Reason), Type: t.Name})
		sort.Slice(e.Actions, func(i, j int) bool { return e.Actions[i].Name < e.Actions[j].Name })
		index()
	}

	for _, to := range o.Types {
		t := to.Type
		t.Description = strings.TrimSpace(t.Description + " (From overrides: " + strings.TrimSpace(to.Reason) + ")")
		if old := types[t.Name]; old != nil {
			return nil, fmt.Errorf("%w: types %s: the spec has a type of that name now; rename or remove the override", errOverride, t.Name)
		}
		s.Types = append(s.Types, cloneType(t))
		index()
	}

	for _, eo := range o.Events {
		tmpl := types[eo.Type]
		if tmpl == nil || tmpl.Kind != genmodel.KindStruct {
			return nil, fmt.Errorf("%w: events %s: no struct %s among the types entries", errOverride, eo.Name, eo.Type)
		}
		if findEvent(s, eo.Name) != nil {
			noop("events %s: the spec has it now", eo.Name)
		} else {
			e := genmodel.Event{Name: eo.Name, Description: strings.TrimSpace(eo.Description)}
			for _, act := range eo.Actions {
				t := cloneType(*tmpl)
				t.Name = payloadTypeName(eo.Name, act)
				if types[t.Name] != nil {
					return nil, fmt.Errorf("%w: events %s: type %s exists", errOverride, eo.Name, t.Name)
				}
				s.Types = append(s.Types, t)
				e.Actions = append(e.Actions, genmodel.Action{Name: act, Description: strings.TrimSpace(eo.Reason), Type: t.Name})
			}
			sort.Slice(e.Actions, func(i, j int) bool { return e.Actions[i].Name < e.Actions[j].Name })
			s.Events = append(s.Events, e)
			sort.Slice(s.Events, func(i, j int) bool { return s.Events[i].Name < s.Events[j].Name })
		}
		// The entry is a template: only its copies are payloads.
		for i := range s.Types {
			if s.Types[i].Name == eo.Type {
				s.Types = append(s.Types[:i], s.Types[i+1:]...)
				break
			}
		}
		index()
	}

	for _, fn := range o.FieldNames {
		found, changed := false, false
		for i := range s.Types {
			for j := range s.Types[i].Fields {
				f := &s.Types[i].Fields[j]
				if f.JSON == fn.JSON {
					found = true
					changed = changed || f.Name != fn.Name
					f.Name = fn.Name
				}
			}
		}
		if !changed {
			if found {
				noop("field_names %q: already named %s", fn.JSON, fn.Name)
			} else {
				noop("field_names %q: no member has that key", fn.JSON)
			}
		}
	}

	for _, eo := range o.EnumValues {
		t := types[eo.In]
		if t == nil || t.Kind != genmodel.KindEnum {
			noop("enum_values %s: no enum of that name", eo.In)
			continue
		}
		added := false
		for _, v := range eo.Add {
			if !hasValue(t, v) {
				t.Values = append(t.Values, genmodel.EnumValue{Value: v, Description: "From overrides: " + strings.TrimSpace(eo.Reason)})
				added = true
			}
		}
		if !added {
			noop("enum_values %s: the spec has %s", eo.In, strings.Join(eo.Add, ", "))
		}
	}

	for _, fo := range o.Fields {
		t := types[fo.In]
		if t == nil || t.Kind != genmodel.KindStruct {
			noop("fields %s.%s: no struct %s", fo.In, fo.JSON, fo.In)
			continue
		}
		var f *genmodel.Field
		for j := range t.Fields {
			if t.Fields[j].JSON == fo.JSON {
				f = &t.Fields[j]
			}
		}
		if f == nil {
			if fo.Type == "" {
				noop("fields %s.%s: no such member (give a type to add it)", fo.In, fo.JSON)
				continue
			}
			t.Fields = append(t.Fields, genmodel.Field{JSON: fo.JSON, Type: fo.Type,
				Description: fo.Description})
			f = &t.Fields[len(t.Fields)-1]
			if fo.Required != nil {
				f.Required = *fo.Required
			}
			if fo.Nullable != nil {
				f.Nullable = *fo.Nullable
			}
			continue
		}
		before := *f
		if fo.Type != "" {
			f.Type = fo.Type
		}
		if fo.Required != nil {
			f.Required = *fo.Required
		}
		if fo.Nullable != nil {
			f.Nullable = *fo.Nullable
		}
		if fo.Description != "" {
			f.Description = fo.Description
		}
		if reflect.DeepEqual(*f, before) {
			noop("fields %s.%s: the spec says so already", fo.In, fo.JSON)
		}
	}
	for _, pass := range []struct {
		kind string
		list []optionalOverride
		req  bool
	}{{"optional", o.Optional, false}, {"required", o.Required, true}} {
		for _, op := range pass.list {
			t := types[op.In]
			if t == nil || t.Kind != genmodel.KindStruct {
				noop("%s %s: no struct %s", pass.kind, op.In, op.In)
				continue
			}
			for _, key := range op.JSON {
				found := false
				for j := range t.Fields {
					if f := &t.Fields[j]; f.JSON == key {
						found = true
						if f.Required == pass.req && !op.OlderSpecs {
							noop("%s %s.%s: the spec has it %s", pass.kind, op.In, key, pass.kind)
						}
						f.Required = pass.req
					}
				}
				if !found && !op.OlderSpecs {
					noop("%s %s.%s: no such member", pass.kind, op.In, key)
				}
			}
		}
	}
	sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Name < s.Types[j].Name })
	return warns, nil
}

func findEvent(s *genmodel.Schema, name string) *genmodel.Event {
	for i := range s.Events {
		if s.Events[i].Name == name {
			return &s.Events[i]
		}
	}
	return nil
}

func findAction(e *genmodel.Event, name string) *genmodel.Action {
	for i := range e.Actions {
		if e.Actions[i].Name == name {
			return &e.Actions[i]
		}
	}
	return nil
}

func hasValue(t *genmodel.Type, v string) bool {
	for _, x := range t.Values {
		if x.Value == v {
			return true
		}
	}
	return false
}

// cloneType copies a type deeply enough that editing the copy leaves the original.
func cloneType(t genmodel.Type) genmodel.Type {
	t.Fields = append([]genmodel.Field(nil), t.Fields...)
	t.Values = append([]genmodel.EnumValue(nil), t.Values...)
	t.Variants = append([]genmodel.Variant(nil), t.Variants...)
	return t
}
