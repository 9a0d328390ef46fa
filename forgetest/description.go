package forgetest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// descriptionJSON is the extract of the forge's published REST description the
// fake is built from; testdata/SOURCE.md says which version and how it was made.
//
//go:embed testdata/rest-description.json
var descriptionJSON []byte

// DescriptionJSON returns the extract of the published REST description the
// fake serves (a copy).
func DescriptionJSON() []byte { return slices.Clone(descriptionJSON) }

// Schema is the part of an OpenAPI 3.0 schema object the fake checks JSON
// against.
type Schema struct {
	Ref        string             `json:"$ref"`
	Type       string             `json:"type"`
	Format     string             `json:"format"`
	Nullable   bool               `json:"nullable"`
	Enum       []any              `json:"enum"`
	Required   []string           `json:"required"`
	Properties map[string]*Schema `json:"properties"`
	Items      *Schema            `json:"items"`
	// AllOf, AnyOf and OneOf combine schemas: a value must match all of
	// AllOf, and at least one of AnyOf and of OneOf (the fake does not check
	// that exactly one of OneOf matches).
	AllOf []*Schema `json:"allOf"`
	AnyOf []*Schema `json:"anyOf"`
	OneOf []*Schema `json:"oneOf"`
}

type parameter struct {
	Ref      string  `json:"$ref"`
	Name     string  `json:"name"`
	In       string  `json:"in"`
	Required bool    `json:"required"`
	Schema   *Schema `json:"schema"`
}

type mediaType struct {
	Schema *Schema `json:"schema"`
}

type responseObj struct {
	Ref     string               `json:"$ref"`
	Content map[string]mediaType `json:"content"`
}

type operation struct {
	OperationID string                  `json:"operationId"`
	Parameters  []*parameter            `json:"parameters"`
	RequestBody *requestBody            `json:"requestBody"`
	Responses   map[string]*responseObj `json:"responses"`
}

type requestBody struct {
	Required bool                 `json:"required"`
	Content  map[string]mediaType `json:"content"`
}

// document is the JSON of the description, as far as the fake reads it.
type document struct {
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Info struct {
		Version string `json:"version"`
	} `json:"info"`
	Paths      map[string]map[string]*operation `json:"paths"`
	Components struct {
		Schemas    map[string]*Schema      `json:"schemas"`
		Parameters map[string]*parameter   `json:"parameters"`
		Responses  map[string]*responseObj `json:"responses"`
	} `json:"components"`
}

// Description is the parsed REST description: the operations the fake serves
// and the schemas their answers follow.
type Description struct {
	document
	routes []route
}

// ServerURL is the API's URL the description names (its first server).
func (d *Description) ServerURL() string {
	if len(d.Servers) == 0 {
		return ""
	}
	return d.Servers[0].URL
}

// Version is the description's info.version.
func (d *Description) Version() string { return d.Info.Version }

// Operations lists the operations served, as "METHOD /path/{template}", sorted.
func (d *Description) Operations() []string {
	var out []string
	for _, r := range d.routes {
		for m := range r.ops {
			out = append(out, m+" "+r.template)
		}
	}
	slices.Sort(out)
	return out
}

// slashed names the path parameters whose values hold slashes as the forge
// takes them unescaped: a file's path ("contents/{path}") and a git ref
// ("git/ref/{ref}" with ref "heads/main").
var slashed = map[string]bool{"path": true, "ref": true}

// route is one path template, compiled.
type route struct {
	template string
	literal  int // literal segments: the more, the more specific
	re       *regexp.Regexp
	names    []string
	ops      map[string]*operation // by upper-case method
}

// ParseDescription parses the embedded REST description.
func ParseDescription() (*Description, error) {
	var d Description
	if err := json.Unmarshal(descriptionJSON, &d.document); err != nil {
		return nil, fmt.Errorf("forgetest: REST description: %w", err)
	}
	for tmpl, ops := range d.Paths {
		r := route{template: tmpl, ops: map[string]*operation{}}
		pattern := "^"
		for _, seg := range strings.Split(strings.TrimPrefix(tmpl, "/"), "/") {
			switch name, ok := strings.CutPrefix(seg, "{"); {
			case ok && strings.HasSuffix(seg, "}"):
				name = strings.TrimSuffix(name, "}")
				r.names = append(r.names, name)
				if slashed[name] {
					pattern += "/(.+)"
				} else {
					pattern += "/([^/]+)"
				}
			default:
				r.literal++
				pattern += "/" + regexp.QuoteMeta(seg)
			}
		}
		r.re = regexp.MustCompile(pattern + "$")
		for m, op := range ops {
			for i, p := range op.Parameters {
				if p.Ref != "" {
					rp, ok := d.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
					if !ok {
						return nil, fmt.Errorf("forgetest: REST description: %s %s: unknown %s", m, tmpl, p.Ref)
					}
					op.Parameters[i] = rp
				}
			}
			for code, res := range op.Responses {
				if res.Ref != "" {
					rr, ok := d.Components.Responses[strings.TrimPrefix(res.Ref, "#/components/responses/")]
					if !ok {
						return nil, fmt.Errorf("forgetest: REST description: %s %s: unknown %s", m, tmpl, res.Ref)
					}
					op.Responses[code] = rr
				}
			}
			r.ops[strings.ToUpper(m)] = op
		}
		d.routes = append(d.routes, r)
	}
	slices.SortFunc(d.routes, func(a, b route) int { return strings.Compare(a.template, b.template) })
	return &d, nil
}

// match finds the route of a request path and its path parameters.
func (d *Description) match(path string) (*route, map[string]string) {
	// The most specific template wins: "commits/{ref}/status" over
	// "commits/{ref}", which a slashed ref would match too.
	var best *route
	var params map[string]string
	for i := range d.routes {
		r := &d.routes[i]
		if best != nil && r.literal <= best.literal {
			continue
		}
		if m := r.re.FindStringSubmatch(path); m != nil {
			best, params = r, map[string]string{}
			for j, name := range r.names {
				params[name] = m[j+1]
			}
		}
	}
	return best, params
}

// Schema returns the named component schema ("hook-delivery-item").
func (d *Description) Schema(name string) *Schema { return d.Components.Schemas[name] }

// checkParam checks one parameter value against its schema.
func checkParam(p *parameter, v string) error {
	if p.Schema == nil {
		return nil
	}
	switch p.Schema.Type {
	case "integer":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("%s parameter %q: %q is not an integer", p.In, p.Name, v)
		}
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%s parameter %q: %q is not a number", p.In, p.Name, v)
		}
	case "boolean":
		if v != "true" && v != "false" {
			return fmt.Errorf("%s parameter %q: %q is not true or false", p.In, p.Name, v)
		}
	case "string":
	default:
		return fmt.Errorf("%s parameter %q: type %q not supported by the fake", p.In, p.Name, p.Schema.Type)
	}
	if len(p.Schema.Enum) > 0 && !slices.Contains(p.Schema.Enum, any(v)) {
		return fmt.Errorf("%s parameter %q: %q is not one of %v", p.In, p.Name, v, p.Schema.Enum)
	}
	return nil
}

// Validate checks a decoded JSON value (as encoding/json decodes into any)
// against schema s: types, nullable, required properties, enums, date-times,
// items; unknown properties are allowed, as in the description. It returns
// every problem found, each with its JSON path.
func (d *Description) Validate(s *Schema, v any) []string {
	var out []string
	d.validate(s, v, "$", &out)
	return out
}

func (d *Description) validate(s *Schema, v any, at string, out *[]string) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		rs, ok := d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		if !ok {
			*out = append(*out, at+": unknown "+s.Ref)
			return
		}
		s = rs
	}
	if v == nil && s.Nullable {
		return
	}
	for _, a := range s.AllOf {
		d.validate(a, v, at, out)
	}
	for _, alts := range [][]*Schema{s.AnyOf, s.OneOf} {
		if len(alts) == 0 {
			continue
		}
		var first []string
		for i, a := range alts {
			var p []string
			d.validate(a, v, at, &p)
			if len(p) == 0 {
				first = nil
				break
			}
			if i == 0 {
				first = p
			}
		}
		*out = append(*out, first...)
	}
	if v == nil {
		if !s.Nullable && s.Type != "" {
			*out = append(*out, at+": null, want "+s.Type)
		}
		return
	}
	bad := func(want string) { *out = append(*out, fmt.Sprintf("%s: %T, want %s", at, v, want)) }
	switch s.Type {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			bad("object")
			return
		}
		for _, name := range s.Required {
			if _, ok := o[name]; !ok {
				*out = append(*out, at+": missing required "+name)
			}
		}
		for name, ps := range s.Properties {
			if pv, ok := o[name]; ok {
				d.validate(ps, pv, at+"."+name, out)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("array")
			return
		}
		for i, item := range a {
			d.validate(s.Items, item, fmt.Sprintf("%s[%d]", at, i), out)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("string")
			return
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339, str); err != nil {
				*out = append(*out, fmt.Sprintf("%s: %q is not a date-time", at, str))
			}
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != float64(int64(n)) {
			bad("integer")
		}
	case "number":
		if _, ok := v.(float64); !ok {
			bad("number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("boolean")
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		*out = append(*out, fmt.Sprintf("%s: %v is not one of %v", at, v, s.Enum))
	}
}
