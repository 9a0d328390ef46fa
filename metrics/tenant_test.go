package metrics_test

import (
	"bytes"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestTenantLabel: a tenant's deliveries carry its name as a label, up to
// MaxTenants names, the rest "other"; without a tenant there is no label. A
// delivery no filter accepted is labelled ignored.
func TestTenantLabel(t *testing.T) {
	m := metrics.New(metrics.Options{MaxTenants: 2})
	for _, tenant := range []string{"acme", "beta", "gamma", "delta", "acme", ""} {
		m.Observe(webhooks.Result{Name: "issues", Status: 202, Verified: true, Tenant: tenant})
	}
	var b bytes.Buffer
	m.WriteTo(&b)
	out := b.String()
	for _, want := range []string{
		`forgehooks_deliveries_total{event="issues",status="202"} 1`,
		`forgehooks_deliveries_total{event="issues",status="202",tenant="acme"} 2`,
		`forgehooks_deliveries_total{event="issues",status="202",tenant="beta"} 1`,
		`forgehooks_deliveries_total{event="issues",status="202",tenant="other"} 2`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
	m.Observe(webhooks.Result{Name: "push", Status: 200, Verified: true, Ignored: true})
	b.Reset()
	m.WriteTo(&b)
	if want := `forgehooks_deliveries_total{event="push",status="200",ignored="true"} 1`; !strings.Contains(b.String(), want+"\n") {
		t.Errorf("no %s in\n%s", want, b.String())
	}
	if strings.Contains(out, "gamma") || strings.Contains(out, "delta") {
		t.Errorf("tenants past the bound named:\n%s", out)
	}
}
