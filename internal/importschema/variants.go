package importschema

import (
	"fmt"
	"sort"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// markVariants records in s which server variants lack each event, action and
// struct member: v maps a variant's name to its import (named with the same lock,
// so a type has the same name in both). An action of an event the variant lacks
// is not marked (the event is); nor is a member of a type the variant lacks.
func markVariants(s *genmodel.Schema, v map[string]*genmodel.Schema) {
	names := sortedKeys(v)
	s.Source.Variants = names
	for _, name := range names {
		vs := v[name]
		events := map[string]map[string]bool{}
		for _, e := range vs.Events {
			acts := map[string]bool{}
			for _, a := range e.Actions {
				acts[a.Name] = true
			}
			events[e.Name] = acts
		}
		for i := range s.Events {
			e := &s.Events[i]
			acts, ok := events[e.Name]
			if !ok {
				e.NotSentBy = append(e.NotSentBy, name)
				continue
			}
			for j := range e.Actions {
				if a := &e.Actions[j]; !acts[a.Name] {
					a.NotSentBy = append(a.NotSentBy, name)
				}
			}
		}
		types := typeMap(vs)
		for i := range s.Types {
			t := &s.Types[i]
			vt, ok := types[t.Name]
			if !ok || t.Kind != genmodel.KindStruct || vt.Kind != genmodel.KindStruct {
				continue
			}
			has := map[string]bool{}
			for _, f := range vt.Fields {
				has[f.JSON] = true
			}
			for j := range t.Fields {
				if f := &t.Fields[j]; !has[f.JSON] {
					f.NotSentBy = append(f.NotSentBy, name)
				}
			}
		}
	}
}

// variantCounts sums up what the variants lack, for the importer's summary.
func variantCounts(s *genmodel.Schema) string {
	counts := map[string][3]int{}
	for _, e := range s.Events {
		for _, v := range e.NotSentBy {
			c := counts[v]
			c[0]++
			counts[v] = c
		}
		for _, a := range e.Actions {
			for _, v := range a.NotSentBy {
				c := counts[v]
				c[1]++
				counts[v] = c
			}
		}
	}
	for _, t := range s.Types {
		for _, f := range t.Fields {
			for _, v := range f.NotSentBy {
				c := counts[v]
				c[2]++
				counts[v] = c
			}
		}
	}
	var out string
	names := append([]string(nil), s.Source.Variants...)
	sort.Strings(names)
	for _, v := range names {
		c := counts[v]
		out += fmt.Sprintf("; %s lacks %d events, %d actions, %d members", v, c[0], c[1], c[2])
	}
	return out
}
