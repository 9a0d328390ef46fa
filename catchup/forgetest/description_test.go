package forgetest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/catchup/forgetest"
)

func TestDescription(t *testing.T) {
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Servers) != 1 || d.Servers[0].URL != "https://api.github.com" || d.Info.Version != "23.0.2" {
		t.Errorf("servers %v, version %q", d.Servers, d.Info.Version)
	}
	if len(d.Paths) != 9 {
		t.Errorf("%d paths, want the 9 delivery operations", len(d.Paths))
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
