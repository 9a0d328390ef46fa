package forgetest

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AppInfo is the app as GET /app describes it to the app itself: what it is
// subscribed to and the permissions it asks of its installations.
type AppInfo struct {
	// Slug is the app's URL-friendly name; default "forgehooks-test".
	Slug string
	// Events are the webhook events the app is subscribed to ("issues",
	// "check_run"); nil: none.
	Events []string
	// Permissions are the app's permissions by name ("issues": "write",
	// "checks": "read"); nil: none.
	Permissions map[string]string
}

// botOperation serves an operation a bot calls with an installation token
// (or Options.Token): an issue comment is recorded (Comments); every other
// operation is answered with the success the description lists for it, a
// value of its schema that echoes the request's fields, so that a client
// decoding it sees what it sent.
func (s *Server) botOperation(w *recorder, r *http.Request, op *operation, params map[string]string, body []byte, now time.Time) {
	id, msg := s.installationOf(r, now)
	if msg != "" && !s.tokenOK(r) {
		s.errorJSON(w, op, http.StatusUnauthorized, msg)
		return
	}
	w.installation = id
	creates := r.Method != http.MethodGet
	if id != 0 {
		if !s.installationLimits(w, op, id, creates, now) {
			return
		}
	} else if !s.primaryLimit(w, op, now) {
		return
	}
	if s.fault(w, r) {
		return
	}
	s.mu.Lock()
	intercept := s.intercept
	s.mu.Unlock()
	if intercept != nil && intercept(w, r) {
		return
	}
	if op.OperationID == "issues/create-comment" {
		s.createComment(w, op, id, params, body, now)
		return
	}
	code, schema := successOf(op)
	if schema == nil {
		w.WriteHeader(code)
		return
	}
	var req any
	json.Unmarshal(body, &req) // checked against the description already
	s.answer(w, op, code, s.echo(op, schema, req, params, now))
}

// tokenOK reports whether r carries Options.Token.
func (s *Server) tokenOK(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || s.opts.Token == "" || !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(cred), []byte(s.opts.Token)) == 1
}

// successOf returns the lowest 2xx status op lists and its JSON schema (nil
// for an answer without a body, such as 204).
func successOf(op *operation) (int, *Schema) {
	best := 0
	for code := range op.Responses {
		if n, err := strconv.Atoi(code); err == nil && n >= 200 && n < 300 && (best == 0 || n < best) {
			best = n
		}
	}
	if best == 0 {
		return http.StatusOK, nil
	}
	res := op.Responses[strconv.Itoa(best)]
	if mt, ok := res.Content["application/json"]; ok {
		return best, mt.Schema
	}
	return best, nil
}

// echo builds op's answer: a value of schema with what the request said of
// it (the body's top-level fields the answer has too, the number, name and
// path in the URL), and for labels added or set, one label per name sent.
func (s *Server) echo(op *operation, schema *Schema, req any, params map[string]string, now time.Time) any {
	switch op.OperationID {
	case "issues/add-labels", "issues/set-labels":
		var labels []any
		for _, name := range labelNames(req) {
			l := s.synthesize(schema.Items, now).(map[string]any)
			l["name"] = name
			labels = append(labels, l)
		}
		if labels == nil {
			labels = []any{}
		}
		return labels
	}
	v := s.synthesize(schema, now)
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	props := s.desc.properties(schema)
	if body, ok := req.(map[string]any); ok {
		for k, x := range body {
			if ps, ok := props[k]; ok && len(s.desc.Validate(ps, x)) == 0 {
				m[k] = x
			}
		}
	}
	for param, field := range map[string]string{"issue_number": "number", "pull_number": "number", "name": "name", "path": "path", "sha": "sha"} {
		v, ok := params[param]
		ps, has := props[field]
		if !ok || !has {
			continue
		}
		var x any = v
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && s.desc.resolve(ps).Type == "integer" {
			x = n
		}
		if len(s.desc.Validate(ps, x)) == 0 {
			m[field] = x
		}
	}
	return m
}

// labelNames reads the names of an add-labels or set-labels body: ["a"],
// {"labels": ["a"]} or {"labels": [{"name": "a"}]}.
func labelNames(req any) []string {
	if m, ok := req.(map[string]any); ok {
		req = m["labels"]
	}
	list, _ := req.([]any)
	var out []string
	for _, x := range list {
		switch x := x.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			if n, ok := x["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// resolve follows s's $ref, if any.
func (d *Description) resolve(s *Schema) *Schema {
	for s != nil && s.Ref != "" {
		s = d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	if s == nil {
		return &Schema{}
	}
	return s
}

// properties returns the properties of an object schema, those of its allOf
// parts and of its first anyOf or oneOf alternative included.
func (d *Description) properties(s *Schema) map[string]*Schema {
	s = d.resolve(s)
	out := map[string]*Schema{}
	for k, v := range s.Properties {
		out[k] = v
	}
	parts := slices.Clone(s.AllOf)
	if len(s.AnyOf) > 0 {
		parts = append(parts, s.AnyOf[0])
	}
	if len(s.OneOf) > 0 {
		parts = append(parts, s.OneOf[0])
	}
	for _, p := range parts {
		for k, v := range d.properties(p) {
			out[k] = v
		}
	}
	return out
}

// maxSynthDepth bounds synthesize on a schema that refers to itself.
const maxSynthDepth = 16

// synthesize makes the smallest value schema accepts: an object with its
// required properties (null where nullable, fresh numbers for ids), empty
// arrays and strings, the first of an enum, the fake's clock for
// date-times, the fake's URL for URIs.
func (s *Server) synthesize(schema *Schema, now time.Time) any {
	return s.synth(schema, now, 0)
}

func (s *Server) synth(schema *Schema, now time.Time, depth int) any {
	sc := s.desc.resolve(schema)
	if depth > maxSynthDepth {
		return nil
	}
	if len(sc.Enum) > 0 {
		return sc.Enum[0]
	}
	// The parts a value must match too: every allOf, the first anyOf and
	// oneOf alternative. Objects are merged; otherwise the first part that
	// has a value is the value, when the schema has no type of its own.
	parts := slices.Clone(sc.AllOf)
	if len(sc.AnyOf) > 0 {
		parts = append(parts, sc.AnyOf[0])
	}
	if len(sc.OneOf) > 0 {
		parts = append(parts, sc.OneOf[0])
	}
	v := s.synthType(sc, now, depth)
	for _, part := range parts {
		pv := s.synth(part, now, depth+1)
		m, isMap := v.(map[string]any)
		pm, partMap := pv.(map[string]any)
		switch {
		case isMap && partMap:
			for k, x := range pm {
				m[k] = x
			}
		case v == nil && sc.Type == "":
			v = pv
		}
	}
	return v
}

// synthType makes the smallest value of sc's own type, its parts aside.
func (s *Server) synthType(sc *Schema, now time.Time, depth int) any {
	switch sc.Type {
	case "object":
		m := map[string]any{}
		for _, name := range sc.Required {
			ps := sc.Properties[name]
			switch rs := s.desc.resolve(ps); {
			case rs.Nullable && len(rs.Enum) == 0:
				m[name] = nil
			case name == "id" && rs.Type == "integer":
				s.mu.Lock()
				s.nextID++
				m[name] = s.nextID
				s.mu.Unlock()
			default:
				m[name] = s.synth(ps, now, depth+1)
			}
		}
		return m
	case "array":
		return []any{}
	case "string":
		switch sc.Format {
		case "date-time":
			return now.UTC().Format(time.RFC3339)
		case "uri":
			return s.URL
		}
		return ""
	case "integer", "number":
		return 0
	case "boolean":
		return false
	}
	return nil
}

// getApp answers GET /app, as the app (a JWT), from Options.App.
func (s *Server) getApp(w http.ResponseWriter, op *operation, now time.Time) {
	a := s.opts.App
	if a.Slug == "" {
		a.Slug = "forgehooks-test"
	}
	code, schema := successOf(op)
	m, _ := s.synthesize(schema, now).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	id, _ := strconv.ParseInt(s.opts.AppID, 10, 64)
	events := []any{}
	for _, e := range a.Events {
		events = append(events, e)
	}
	perms := map[string]any{}
	for k, v := range a.Permissions {
		perms[k] = v
	}
	m["id"], m["slug"], m["name"], m["node_id"] = id, a.Slug, a.Slug, fmt.Sprintf("A_%d", id)
	m["html_url"] = "https://forge.example/apps/" + a.Slug
	m["events"], m["permissions"] = events, perms
	s.answer(w, op, code, m)
}
