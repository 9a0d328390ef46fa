//go:build ignore

// make writes the synthetic payloads of this directory and its README: for each
// name of the behaviour contract that no public example has, a payload derived from a
// public example of the same event (another action) with the changes listed
// below, or, for the few events with no public example at all, put together from
// members of other public examples. Then, for every other name of the schema
// (../../../../schema) that has no example yet, a payload made from its type:
// its required members, each a member of a public example where one has the
// same type, and otherwise a value made from the type. Run it here with
// `go run make.go`; the output is deterministic.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// recipe makes one payload. from is an example under ../examples ("" to start
// from an empty object); set gives members by dotted path, each value JSON text
// or "@file#path" for a member of another example; del removes members.
type recipe struct {
	name string
	from string
	set  [][2]string
	del  []string
}

const (
	ts     = `"2024-05-01T12:00:00Z"`
	editTo = `{"from":"The previous text"}`
)

var recipes = []recipe{
	{name: "code_scanning_alert.appeared_in_branch", from: "code_scanning_alert/created-0.json", set: [][2]string{{"ref", `"refs/heads/feature"`}}},
	{name: "code_scanning_alert.reopened_by_user", from: "code_scanning_alert/closed_by_user-0.json", set: [][2]string{{"alert.state", `"open"`}, {"alert.dismissed_at", "null"}, {"alert.dismissed_by", "null"}, {"alert.dismissed_reason", "null"}}},
	{name: "dependabot_alert.dismissed", from: "dependabot_alert/created-0.json", set: [][2]string{{"alert.state", `"dismissed"`}, {"alert.dismissed_at", ts}, {"alert.dismissed_by", "@dependabot_alert/created-0.json#sender"}, {"alert.dismissed_reason", `"tolerable_risk"`}, {"alert.dismissed_comment", `"Not reachable from our code."`}, {"alert.updated_at", ts}}},
	{name: "dependabot_alert.reintroduced", from: "dependabot_alert/fixed-0.json", set: [][2]string{{"alert.state", `"open"`}, {"alert.fixed_at", "null"}, {"alert.updated_at", ts}}},
	{name: "dependabot_alert.reopened", from: "dependabot_alert/created-0.json", set: [][2]string{{"alert.state", `"open"`}, {"alert.updated_at", ts}}},
	{name: "deploy_key.deleted", from: "deploy_key/created-0.json"},
	{name: "deployment_protection_rule.requested", set: [][2]string{
		{"environment", `"production"`}, {"event", `"deployment"`},
		{"deployment_callback_url", `"https://api.forge.example/repos/octo-org/octo-repo/actions/runs/1/deployment_protection_rule"`},
		{"deployment", "@deployment/created-0.json#deployment"}, {"pull_requests", "[]"},
		{"repository", "@deployment/created-0.json#repository"}, {"sender", "@deployment/created-0.json#sender"}}},
	{name: "discussion.deleted", from: "discussion/created-0.json"},
	{name: "discussion.unpinned", from: "discussion/pinned-0.json"},
	{name: "installation_target.renamed", set: [][2]string{
		{"account", "@organization/renamed-0.json#organization"}, {"changes", `{"login":{"from":"old-login"}}`},
		{"installation", `{"id":2,"node_id":"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMg=="}`}, {"target_type", `"Organization"`},
		{"sender", "@organization/renamed-0.json#sender"}}},
	{name: "issues.closed", from: "issues/reopened-0.json", set: [][2]string{{"issue.state", `"closed"`}, {"issue.closed_at", ts}, {"issue.updated_at", ts}}},
	{name: "marketplace_purchase.pending_change", from: "marketplace_purchase/changed-0.json", set: [][2]string{{"marketplace_purchase.next_billing_date", ts}}},
	{name: "marketplace_purchase.pending_change_cancelled", from: "marketplace_purchase/changed-0.json"},
	{name: "member.removed", from: "member/added-0.json", del: []string{"changes"}},
	{name: "milestone.edited", from: "milestone/created-0.json", set: [][2]string{{"changes", `{"description":` + editTo + `}`}}},
	{name: "milestone.opened", from: "milestone/created-0.json"},
	{name: "organization.deleted", from: "organization/renamed-0.json", del: []string{"changes"}},
	{name: "organization.member_removed", from: "organization/member_added-0.json"},
	{name: "package.updated", from: "package/published-0.json"},
	{name: "project.closed", from: "project/created-0.json", set: [][2]string{{"project.state", `"closed"`}}},
	{name: "project.deleted", from: "project/created-0.json"},
	{name: "project.edited", from: "project/created-0.json", set: [][2]string{{"changes", `{"name":` + editTo + `}`}}},
	{name: "project.reopened", from: "project/created-0.json"},
	{name: "project_card.converted", from: "project_card/created-0.json", set: [][2]string{{"changes", `{"note":` + editTo + `}`}}},
	{name: "project_card.edited", from: "project_card/created-0.json", set: [][2]string{{"changes", `{"note":` + editTo + `}`}}},
	{name: "project_column.deleted", from: "project_column/created-0.json"},
	{name: "project_column.moved", from: "project_column/created-0.json"},
	{name: "projects_v2_item.deleted", from: "projects_v2_item/archived-0.json", del: []string{"changes"}},
	{name: "pull_request.auto_merge_disabled", from: "pull_request/opened-0.json", set: [][2]string{{"reason", `"Auto-merge was disabled by a user"`}}},
	{name: "pull_request.auto_merge_enabled", from: "pull_request/opened-0.json", set: [][2]string{{"reason", `"Auto-merge was enabled by a user"`}}},
	{name: "pull_request.demilestoned", from: "pull_request/opened-0.json", set: [][2]string{{"milestone", "@issues/demilestoned-0.json#milestone"}}},
	{name: "pull_request.dequeued", from: "pull_request/opened-0.json", set: [][2]string{{"reason", `"MERGE_CONFLICT"`}}},
	{name: "pull_request.edited", from: "pull_request/opened-0.json", set: [][2]string{{"changes", `{"title":` + editTo + `}`}}},
	{name: "pull_request.enqueued", from: "pull_request/opened-0.json"},
	{name: "pull_request.milestoned", from: "pull_request/opened-0.json", set: [][2]string{{"milestone", "@issues/milestoned-0.json#milestone"}}},
	{name: "pull_request_review.edited", from: "pull_request_review/submitted-0.json", set: [][2]string{{"changes", `{"body":` + editTo + `}`}}},
	{name: "registry_package.published", from: "package/published-0.json", set: [][2]string{{"registry_package", "@package/published-0.json#package"}}, del: []string{"package"}},
	{name: "registry_package.updated", from: "package/published-0.json", set: [][2]string{{"registry_package", "@package/published-0.json#package"}}, del: []string{"package"}},
	{name: "release.unpublished", from: "release/published-0.json", set: [][2]string{{"release.published_at", "null"}}},
	{name: "repository.archived", from: "repository/publicized-0.json", set: [][2]string{{"repository.archived", "true"}}},
	{name: "repository.deleted", from: "repository/created-0.json"},
	{name: "repository.unarchived", from: "repository/publicized-0.json", set: [][2]string{{"repository.archived", "false"}}},
	{name: "repository_vulnerability_alert.reopen", from: "repository_vulnerability_alert/create-0.json"},
	{name: "repository_vulnerability_alert.resolve", from: "repository_vulnerability_alert/create-0.json", set: [][2]string{{"alert.state", `"fixed"`}, {"alert.fixed_at", ts}}},
	{name: "secret_scanning_alert.created", set: secretScanning(`"open"`)},
	{name: "secret_scanning_alert.reopened", set: secretScanning(`"open"`)},
	{name: "secret_scanning_alert.resolved", set: append(secretScanning(`"resolved"`), [2]string{"alert.resolution", `"false_positive"`}, [2]string{"alert.resolved_at", ts}, [2]string{"alert.resolved_by", "@watch/started-0.json#sender"})},
	{name: "secret_scanning_alert.revoked", set: append(secretScanning(`"resolved"`), [2]string{"alert.resolution", `"revoked"`}, [2]string{"alert.resolved_at", ts}, [2]string{"alert.resolved_by", "@watch/started-0.json#sender"})},
	{name: "secret_scanning_alert_location.created", set: [][2]string{
		{"alert", `{"number":42,"created_at":"2024-05-01T12:00:00Z","url":"https://api.forge.example/repos/octo-org/octo-repo/secret-scanning/alerts/42","html_url":"https://forge.example/octo-org/octo-repo/security/secret-scanning/42","locations_url":"https://api.forge.example/repos/octo-org/octo-repo/secret-scanning/alerts/42/locations","state":"open","resolution":null,"resolved_at":null,"resolved_by":null,"secret_type":"mailchimp_api_key","secret_type_display_name":"Mailchimp API Key","validity":"unknown"}`},
		{"location", `{"type":"commit","details":{"path":"config/settings.txt","start_line":2,"end_line":2,"start_column":7,"end_column":43,"blob_sha":"2044bb6ccd535142b0aa5cd6b1b8b15ac53e4e1a","blob_url":"https://api.forge.example/repos/octo-org/octo-repo/git/blobs/2044bb6ccd535142b0aa5cd6b1b8b15ac53e4e1a","commit_sha":"6f5b1ab9e5b71a4ee0a1d1c5ec3ac9e9a2e8e0b5","commit_url":"https://api.forge.example/repos/octo-org/octo-repo/git/commits/6f5b1ab9e5b71a4ee0a1d1c5ec3ac9e9a2e8e0b5"}}`},
		{"repository", "@watch/started-0.json#repository"}, {"sender", "@watch/started-0.json#sender"}}},
	{name: "security_advisory.performed", from: "security_advisory/published-0.json"},
	{name: "sponsorship.cancelled", from: "sponsorship/created-0.json"},
	{name: "sponsorship.edited", from: "sponsorship/created-0.json", set: [][2]string{{"changes", `{"privacy_level":{"from":"private"}}`}}},
	{name: "sponsorship.pending_cancellation", from: "sponsorship/created-0.json", set: [][2]string{{"effective_date", ts}}},
	{name: "sponsorship.tier_changed", from: "sponsorship/pending_tier_change-0.json"},
	{name: "workflow_run.in_progress", from: "workflow_run/requested-0.json", set: [][2]string{{"workflow_run.status", `"in_progress"`}}},
}

// secretScanning is the start of a secret_scanning_alert payload in a state.
func secretScanning(state string) [][2]string {
	return [][2]string{
		{"alert", `{"number":42,"created_at":"2024-05-01T12:00:00Z","updated_at":"2024-05-01T12:00:00Z","url":"https://api.forge.example/repos/octo-org/octo-repo/secret-scanning/alerts/42","html_url":"https://forge.example/octo-org/octo-repo/security/secret-scanning/42","locations_url":"https://api.forge.example/repos/octo-org/octo-repo/secret-scanning/alerts/42/locations","state":` + state + `,"resolution":null,"resolved_at":null,"resolved_by":null,"resolution_comment":null,"secret_type":"mailchimp_api_key","secret_type_display_name":"Mailchimp API Key","validity":"unknown","push_protection_bypassed":false,"push_protection_bypassed_by":null,"push_protection_bypassed_at":null,"publicly_leaked":false,"multi_repo":false}`},
		{"repository", "@watch/started-0.json#repository"},
		{"sender", "@watch/started-0.json#sender"},
	}
}

func main() {
	var readme strings.Builder
	readme.WriteString(`# Synthetic payloads

Written for this project, not taken from the forge: one payload for each name of
the behaviour contract that no public example under ../examples has, so that every one of
the 264 names of its events table (schema/names-original.txt) is decoded at
least once by the corpus tests. They are never mixed into ../examples;
corpus.Example.Synthetic is true for them.

` + "`make.go`" + ` beside this file writes them (` + "`go run make.go`" + ` here), each from a public
example of the same event (another action) with the action set and the changes
listed, or, for events with no public example at all, put together from members of
other public examples; ` + "`@file#path`" + ` names such a member. Keys come out sorted;
times added are ` + ts + `. Members an action adds (a "changes" object, a reason)
follow the shapes of the forge's published spec.

| file | made from | changes besides the action |
|---|---|---|
`)
	for _, r := range recipes {
		event, action, _ := strings.Cut(r.name, ".")
		doc := map[string]any{}
		if r.from != "" {
			doc = read(r.from).(map[string]any)
		}
		doc["action"] = action
		var notes []string
		for _, kv := range r.set {
			setPath(doc, kv[0], value(kv[1]))
			notes = append(notes, fmt.Sprintf("`%s` = `%s`", kv[0], short(kv[1])))
		}
		for _, p := range r.del {
			parent, last := walk(doc, p)
			delete(parent, last)
			notes = append(notes, fmt.Sprintf("`%s` removed", p))
		}
		out := filepath.Join(event, action+"-0.json")
		if err := os.MkdirAll(event, 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(out, marshal(doc), 0o644); err != nil {
			panic(err)
		}
		from := "`../examples/" + r.from + "`"
		if r.from == "" {
			from = "members of other examples"
		}
		fmt.Fprintf(&readme, "| `%s` | %s | %s |\n", out, from, strings.Join(notes, "; "))
	}
	fromSchema(&readme)
	if err := os.WriteFile("README.md", []byte(readme.String()), 0o644); err != nil {
		panic(err)
	}
}

// The schema, as much of it as fromSchema reads.
type (
	schemaEvents struct {
		Events []struct {
			Name    string
			Type    string
			Actions []struct{ Name, Type string }
		}
	}
	schemaTypes struct {
		Types []*schemaType
	}
	schemaType struct {
		Name   string
		Kind   string
		Values []struct{ Value string }
		Fields []struct {
			JSON     string `yaml:"json"`
			Type     string
			Required bool
			Nullable bool
		}
		Variants []struct {
			Type  string
			Match struct {
				Has    []string
				Equals map[string]string
			}
		}
	}
)

const schemaDir = "../../../../schema"

// fromSchema writes a payload for each name of the schema that no example
// has, and its README rows.
func fromSchema(readme *strings.Builder) {
	var events schemaEvents
	var types schemaTypes
	loadYAML(filepath.Join(schemaDir, "events.yaml"), &events)
	loadYAML(filepath.Join(schemaDir, "types.yaml"), &types)
	byName := map[string]*schemaType{}
	for _, t := range types.Types {
		byName[t.Name] = t
	}
	g := &generator{types: byName, samples: map[string]any{}}

	// Names with an example, public or written above; and samples of types
	// from the public examples.
	have := map[string]bool{}
	typeOf := map[string]string{}
	for _, e := range events.Events {
		typeOf[e.Name] = e.Type
		for _, a := range e.Actions {
			typeOf[e.Name+"."+a.Name] = a.Type
		}
	}
	for _, r := range recipes {
		event, _, _ := strings.Cut(r.name, ".")
		have[event], have[r.name] = true, true
	}
	paths, _ := filepath.Glob(filepath.Join("../examples", "*", "*.json"))
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		doc, _ := decode(b).(map[string]any)
		event := filepath.Base(filepath.Dir(p))
		name := event
		if a, ok := doc["action"].(string); ok {
			name += "." + a
		}
		have[event], have[name] = true, true
		if typeOf[name] != "" {
			g.collect(typeOf[name], doc)
		}
	}
	fmt.Fprintf(readme, `
Then one payload for each further name of the schema (../../../../schema) that no
example has: its type's required members, each a member of a public example of the
same type where there is one, and otherwise a value made from the type (a string
"example" or a URL, the number 42, false, the first value of an enum, the time
above, an empty array or object).

| file | type |
|---|---|
`)
	for _, e := range events.Events {
		targets := [][2]string{{"", e.Type}}
		if len(e.Actions) > 0 {
			targets = targets[:0]
			for _, a := range e.Actions {
				targets = append(targets, [2]string{a.Name, a.Type})
			}
		}
		for _, t := range targets {
			name := e.Name
			if t[0] != "" {
				name += "." + t[0]
			}
			if have[name] || t[1] == "" {
				continue
			}
			doc, ok := g.value(t[1], 0).(map[string]any)
			if !ok {
				panic(name + ": its type is not an object")
			}
			file := e.Name + "-0.json"
			if t[0] != "" {
				doc["action"] = t[0]
				file = t[0] + "-0.json"
			}
			out := filepath.Join(e.Name, file)
			if err := os.MkdirAll(e.Name, 0o755); err != nil {
				panic(err)
			}
			if err := os.WriteFile(out, marshal(doc), 0o644); err != nil {
				panic(err)
			}
			fmt.Fprintf(readme, "| `%s` | `%s` |\n", out, t[1])
		}
	}
}

func loadYAML(path string, v any) {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("%s: %v", path, err))
	}
}

// generator makes values of the schema's types.
type generator struct {
	types   map[string]*schemaType
	samples map[string]any // a public example's value of each struct type met
}

// elem is the type of a slice's elements, or "".
func elem(typ string) string {
	if e, ok := strings.CutPrefix(typ, "[]"); ok {
		return strings.TrimPrefix(e, "*")
	}
	return ""
}

// collect records, for typ and every struct type below it, the first value
// of the public examples.
func (g *generator) collect(typ string, v any) {
	typ = strings.TrimPrefix(typ, "*")
	if e := elem(typ); e != "" {
		if arr, ok := v.([]any); ok && len(arr) > 0 {
			g.collect(e, arr[0])
		}
		return
	}
	t := g.types[typ]
	obj, ok := v.(map[string]any)
	if t == nil || t.Kind != "struct" || !ok {
		return
	}
	if _, seen := g.samples[typ]; !seen {
		g.samples[typ] = v
	}
	for _, f := range t.Fields {
		if fv, ok := obj[f.JSON]; ok && fv != nil {
			g.collect(f.Type, fv)
		}
	}
}

// value returns a value of typ.
func (g *generator) value(typ string, depth int) any {
	typ = strings.TrimPrefix(typ, "*")
	switch typ {
	case "string":
		return "example"
	case "int64":
		return json.Number("42")
	case "float64":
		return json.Number("1.5")
	case "bool":
		return false
	case "timestamp":
		return value(ts)
	case "raw":
		return map[string]any{}
	}
	if elem(typ) != "" {
		return []any{}
	}
	if strings.HasPrefix(typ, "map[") {
		return map[string]any{}
	}
	t := g.types[typ]
	if t == nil {
		panic("unknown type " + typ)
	}
	if s, ok := g.samples[typ]; ok && depth > 0 {
		return decode(marshal(s)) // a copy
	}
	switch t.Kind {
	case "enum":
		return t.Values[0].Value
	case "union":
		v := t.Variants[0]
		out := g.value(v.Type, depth+1)
		if obj, ok := out.(map[string]any); ok {
			vt := g.types[strings.TrimPrefix(v.Type, "*")]
			for _, h := range v.Match.Has {
				if _, ok := obj[h]; !ok && vt != nil {
					for _, f := range vt.Fields {
						if f.JSON == h {
							obj[h] = g.value(f.Type, depth+1)
						}
					}
				}
			}
			keys := make([]string, 0, len(v.Match.Equals))
			for k := range v.Match.Equals {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				obj[k] = v.Match.Equals[k]
			}
		}
		return out
	}
	obj := map[string]any{}
	for _, f := range t.Fields {
		if !f.Required {
			continue
		}
		switch {
		case depth > 8 && f.Nullable:
			obj[f.JSON] = nil
		case f.Type == "string" && (f.JSON == "url" || strings.HasSuffix(f.JSON, "_url")):
			obj[f.JSON] = "https://api.forge.example/example"
		default:
			obj[f.JSON] = g.value(f.Type, depth+1)
		}
	}
	return obj
}

func short(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func read(path string) any {
	b, err := os.ReadFile(filepath.Join("..", "examples", path))
	if err != nil {
		panic(err)
	}
	return decode(b)
}

func decode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // ids stay exact
	var v any
	if err := d.Decode(&v); err != nil {
		panic(fmt.Sprintf("%s: %v", b, err))
	}
	return v
}

func value(s string) any {
	if ref, ok := strings.CutPrefix(s, "@"); ok {
		file, path, _ := strings.Cut(ref, "#")
		doc := read(file).(map[string]any)
		parent, last := walk(doc, path)
		return parent[last]
	}
	return decode([]byte(s))
}

// walk returns the object holding the last element of a dotted path, creating
// objects on the way.
func walk(doc map[string]any, path string) (map[string]any, string) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := doc[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[p] = next
		}
		doc = next
	}
	return doc, parts[len(parts)-1]
}

func setPath(doc map[string]any, path string, v any) {
	parent, last := walk(doc, path)
	parent[last] = v
}

func marshal(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
