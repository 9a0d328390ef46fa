// Package samplegen synthesizes valid example payloads from a schema (gen/model):
// for an event or event.action, a JSON object with every required member, enum
// members set to one of their values, timestamps in the date-time format, unions
// as one of their variants (its match satisfied), and the event's own action. The
// same schema, name and seed give the same bytes. cmd/gensamples writes them to
// the corpus for the names that have no example.
package samplegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// ErrUnknownName reports a name the schema has no payload for.
var ErrUnknownName = errors.New("samplegen: no such event or event.action in the schema")

// maxDepth bounds nesting: a schema whose required members form a cycle has
// no finite sample.
const maxDepth = 40

// Payload returns a sample payload of name ("event" or "event.action") of s,
// compact JSON. seed picks enum values, union variants and numbers; the same
// (s, name, seed) always gives the same bytes.
func Payload(s *genmodel.Schema, name string, seed uint64) ([]byte, error) {
	typ, action, err := payloadType(s, name)
	if err != nil {
		return nil, err
	}
	g := &generator{types: map[string]*genmodel.Type{}, rnd: rand.New(rand.NewPCG(seed, seedOf(name)))}
	for i := range s.Types {
		g.types[s.Types[i].Name] = &s.Types[i]
	}
	t := g.types[typ]
	if t == nil || t.Kind != genmodel.KindStruct {
		return nil, fmt.Errorf("samplegen: %s: payload type %q is not a struct of the schema", name, typ)
	}
	var b bytes.Buffer
	override := map[string]string{}
	if action != "" {
		override["action"] = strconv.Quote(action)
	}
	if err := g.object(&b, t, nil, override, 0); err != nil {
		return nil, fmt.Errorf("samplegen: %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// Names returns every name of s with a payload: each event without actions,
// and each event.action, in the schema's order.
func Names(s *genmodel.Schema) []string {
	var out []string
	for _, e := range s.Events {
		if len(e.Actions) == 0 {
			out = append(out, e.Name)
			continue
		}
		for _, a := range e.Actions {
			out = append(out, e.Name+"."+a.Name)
		}
	}
	return out
}

// payloadType returns the payload type of name and the action to set.
func payloadType(s *genmodel.Schema, name string) (typ, action string, err error) {
	event, act, hasAction := strings.Cut(name, ".")
	for _, e := range s.Events {
		if e.Name != event {
			continue
		}
		if !hasAction {
			if e.Type == "" {
				return "", "", fmt.Errorf("%w: %s has actions; name one", ErrUnknownName, name)
			}
			return e.Type, "", nil
		}
		for _, a := range e.Actions {
			if a.Name == act {
				return a.Type, act, nil
			}
		}
		if e.OtherActionsType != "" {
			return e.OtherActionsType, act, nil
		}
	}
	return "", "", fmt.Errorf("%w: %q", ErrUnknownName, name)
}

// seedOf mixes the name into the seed, so that the names' samples differ.
func seedOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

type generator struct {
	types map[string]*genmodel.Type
	rnd   *rand.Rand
}

// object writes a struct's required members (and those a match needs), in the
// schema's order; override gives some members' JSON, lacks members to leave out.
func (g *generator) object(b *bytes.Buffer, t *genmodel.Type, lacks []string, override map[string]string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: nested more than %d deep (a cycle of required members?)", t.Name, maxDepth)
	}
	b.WriteByte('{')
	n := 0
	for _, f := range t.Fields {
		v, forced := override[f.JSON]
		if !f.Required && !forced || contains(lacks, f.JSON) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeString(b, f.JSON)
		b.WriteByte(':')
		if forced && v != "" {
			b.WriteString(v)
			continue
		}
		e, err := genmodel.ParseTypeExpr(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name, f.JSON, err)
		}
		if err := g.value(b, e, f.JSON, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// value writes a value of the type expression e; key is the member it is of,
// for a plausible string.
func (g *generator) value(b *bytes.Buffer, e *genmodel.TypeExpr, key string, depth int) error {
	switch e.Kind {
	case genmodel.ExprArray:
		b.WriteByte('[')
		if err := g.value(b, e.Elem, key, depth+1); err != nil {
			return err
		}
		b.WriteByte(']')
		return nil
	case genmodel.ExprMap:
		b.WriteString(`{"key":`)
		if err := g.value(b, e.Elem, key, depth+1); err != nil {
			return err
		}
		b.WriteByte('}')
		return nil
	case genmodel.ExprBuiltin:
		g.builtin(b, e.Name, key)
		return nil
	}
	t := g.types[e.Name]
	if t == nil {
		return fmt.Errorf("type %q is not in the schema", e.Name)
	}
	switch t.Kind {
	case genmodel.KindEnum:
		if len(t.Values) == 0 {
			return fmt.Errorf("enum %s has no values", t.Name)
		}
		v := t.Values[g.rnd.IntN(len(t.Values))].Value
		if t.Base == "int64" {
			b.WriteString(v)
		} else {
			writeString(b, v)
		}
		return nil
	case genmodel.KindUnion:
		if len(t.Variants) == 0 {
			return fmt.Errorf("union %s has no variants", t.Name)
		}
		return g.variant(b, t, t.Variants[g.rnd.IntN(len(t.Variants))], key, depth)
	}
	return g.object(b, t, nil, nil, depth)
}

// variant writes a value of one of a union's variants that its match holds for.
func (g *generator) variant(b *bytes.Buffer, u *genmodel.Type, v genmodel.Variant, key string, depth int) error {
	e, err := genmodel.ParseTypeExpr(v.Type)
	if err != nil {
		return fmt.Errorf("%s: %w", u.Name, err)
	}
	var st *genmodel.Type
	if e.Kind == genmodel.ExprNamed {
		st = g.types[e.Name]
	}
	if st == nil || st.Kind != genmodel.KindStruct || len(v.Match.Has)+len(v.Match.Equals)+len(v.Match.Lacks) == 0 {
		if v.Match.JSON == "object" && e.Kind == genmodel.ExprBuiltin {
			b.WriteString("{}")
			return nil
		}
		return g.value(b, e, key, depth+1)
	}
	override := map[string]string{}
	for _, k := range v.Match.Has {
		override[k] = "" // present, with a value of its type
	}
	for k, val := range v.Match.Equals {
		override[k] = strconv.Quote(val)
	}
	return g.object(b, st, v.Match.Lacks, override, depth+1)
}

// builtin writes a value of a builtin type; strings look like what the member
// holds (a URL for "…url", a commit hash for "…sha").
func (g *generator) builtin(b *bytes.Buffer, name, key string) {
	n := 1 + g.rnd.IntN(999999)
	switch name {
	case "bool":
		b.WriteString(strconv.FormatBool(g.rnd.IntN(2) == 1))
	case "int64":
		b.WriteString(strconv.Itoa(n))
	case "float64":
		b.WriteString(strconv.Itoa(n))
	case "timestamp":
		t := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second)
		writeString(b, t.Format(time.RFC3339))
	case "raw":
		b.WriteString("{}")
	default:
		k := strings.ToLower(key)
		switch {
		case strings.HasSuffix(k, "url"):
			seg := strings.TrimSuffix(strings.TrimSuffix(k, "url"), "_")
			if seg == "" {
				seg = "api"
			}
			writeString(b, "https://forge.example/"+seg+"/"+strconv.Itoa(n))
		case strings.HasSuffix(k, "sha") || k == "before" || k == "after":
			writeString(b, fmt.Sprintf("%040x", uint64(n)*0x9e3779b97f4a7c15))
		case k == "login" || k == "name":
			writeString(b, "sample-"+strconv.Itoa(n))
		default:
			writeString(b, k+"-"+strconv.Itoa(n))
		}
	}
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
