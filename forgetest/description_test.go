package forgetest_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/forgetest"
)

func TestDescription(t *testing.T) {
	t.Parallel()
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	if d.ServerURL() != "https://api.github.com" || d.Version() != "23.0.2" {
		t.Errorf("server %q, version %q", d.ServerURL(), d.Version())
	}
	// The delivery logs, and what a bot commonly calls: every operation of
	// testdata/operations.txt, each under its method and path.
	want := []string{
		"GET /app/hook/deliveries", "GET /app/hook/deliveries/{delivery_id}", "GET /orgs/{org}/hooks/{hook_id}/deliveries",
		"GET /orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}", "GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
		"GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}", "POST /app/hook/deliveries/{delivery_id}/attempts",
		"POST /orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}/attempts", "POST /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts",
		"GET /app", "POST /app/installations/{installation_id}/access_tokens",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments", "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
		"DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", "POST /repos/{owner}/{repo}/issues/{issue_number}/reactions",
		"POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
		"POST /repos/{owner}/{repo}/check-runs", "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}",
		"POST /repos/{owner}/{repo}/statuses/{sha}", "GET /repos/{owner}/{repo}/contents/{path}",
		"PUT /repos/{owner}/{repo}/contents/{path}", "GET /repos/{owner}/{repo}/git/ref/{ref}", "POST /repos/{owner}/{repo}/git/refs",
	}
	got := d.Operations()
	for _, op := range want {
		if !slices.Contains(got, op) {
			t.Errorf("operation %s is not served", op)
		}
	}
	list, err := os.ReadFile("testdata/operations.txt")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(string(list), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ids = append(ids, line)
		}
	}
	if n := len(got); n != len(ids)+9 { // the nine delivery-log operations
		t.Errorf("%d operations served, want the %d of operations.txt and the nine of the delivery logs", n, len(ids))
	}
	item := d.Schema("hook-delivery-item")
	if item == nil || len(item.Required) != 11 {
		t.Fatalf("hook-delivery-item: %+v", item)
	}
	valid := `{"id":1,"guid":"g","delivered_at":"2026-03-14T12:00:00Z","redelivery":false,"duration":0.5,"status":"OK","status_code":200,"event":"push","action":null,"installation_id":null,"repository_id":7,"extra":true}`
	tests := []struct {
		name, json string
		problems   []string
	}{
		{"valid", valid, nil},
		{"missing", `{"id":1}`, []string{"missing required guid", "missing required delivered_at", "missing required status_code"}},
		{"types", strings.Replace(strings.Replace(valid, `"id":1`, `"id":1.5`, 1), `"redelivery":false`, `"redelivery":"no"`, 1), []string{"$.id: float64, want integer", "$.redelivery: string, want boolean"}},
		{"not nullable", strings.Replace(valid, `"event":"push"`, `"event":null`, 1), []string{"$.event: null, want string"}},
		{"date-time", strings.Replace(valid, `2026-03-14T12:00:00Z`, `yesterday`, 1), []string{`"yesterday" is not a date-time`}},
		{"not an object", `[]`, []string{"$: []interface {}, want object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(d.Validate(item, v), "\n")
			if len(tt.problems) == 0 && got != "" {
				t.Errorf("problems %q, want none", got)
			}
			for _, p := range tt.problems {
				if !strings.Contains(got, p) {
					t.Errorf("problems %q, want one with %q", got, p)
				}
			}
		})
	}
}

// Validate reads allOf (every part), anyOf and oneOf (some alternative), and
// a nullable schema's null whatever its parts.
func TestValidateCombinators(t *testing.T) {
	t.Parallel()
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	str, num := &forgetest.Schema{Type: "string"}, &forgetest.Schema{Type: "integer"}
	named := &forgetest.Schema{Type: "object", Required: []string{"name"}}
	tests := []struct {
		name    string
		schema  *forgetest.Schema
		json    string
		problem string // "" for none
	}{
		{"oneOf first", &forgetest.Schema{OneOf: []*forgetest.Schema{str, num}}, `"a"`, ""},
		{"oneOf second", &forgetest.Schema{OneOf: []*forgetest.Schema{str, num}}, `1`, ""},
		{"oneOf none", &forgetest.Schema{OneOf: []*forgetest.Schema{str, num}}, `true`, "want string"},
		{"anyOf none", &forgetest.Schema{AnyOf: []*forgetest.Schema{num}}, `"a"`, "want integer"},
		{"allOf both", &forgetest.Schema{AllOf: []*forgetest.Schema{named, {Type: "object", Required: []string{"id"}}}}, `{"name":"a","id":1}`, ""},
		{"allOf one missing", &forgetest.Schema{AllOf: []*forgetest.Schema{named, {Type: "object", Required: []string{"id"}}}}, `{"name":"a"}`, "missing required id"},
		{"nullable anyOf", &forgetest.Schema{Nullable: true, AnyOf: []*forgetest.Schema{named}}, `null`, ""},
		{"not nullable anyOf", &forgetest.Schema{AnyOf: []*forgetest.Schema{named}}, `null`, "null, want object"},
		{"a description ref", &forgetest.Schema{OneOf: []*forgetest.Schema{{Ref: "#/components/schemas/label"}}}, `{"id":1}`, "missing required name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(d.Validate(tt.schema, v), "\n")
			if (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("problems %q, want %q", got, tt.problem)
			}
		})
	}
}
