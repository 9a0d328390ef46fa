//go:build ignore

// make writes the synthetic payloads of this directory and its README: for each
// name of ORIGINAL-SPEC.md that no public example has, a payload derived from a
// public example of the same event (another action) with the changes listed
// below, or, for the few events with no public example at all, put together from
// members of other public examples. Run it here with `go run make.go`; the output
// is deterministic.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
ORIGINAL-SPEC.md that no public example under ../examples has, so that every one of
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
	if err := os.WriteFile("README.md", []byte(readme.String()), 0o644); err != nil {
		panic(err)
	}
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
