package forgetest_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/forgetest"
)

func TestDescription(t *testing.T) {
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	if d.ServerURL() != "https://api.github.com" || d.Version() != "23.0.2" {
		t.Errorf("server %q, version %q", d.ServerURL(), d.Version())
	}
	want := []string{
		"GET /app/hook/deliveries", "GET /app/hook/deliveries/{delivery_id}", "GET /orgs/{org}/hooks/{hook_id}/deliveries",
		"GET /orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}", "GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
		"GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}", "POST /app/hook/deliveries/{delivery_id}/attempts",
		"POST /app/installations/{installation_id}/access_tokens",
		"POST /orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}/attempts", "POST /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts",
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
	}
	if got := d.Operations(); !slices.Equal(got, want) {
		t.Errorf("operations %q\nwant %q", got, want)
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
