package inspector_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestTenantFilter: the list API keeps one tenant's deliveries with
// ?tenant=, rows carry the tenant, and a tenant's delivery is keyed
// "tenant/id" so that two tenants' deliveries of one id are both shown and
// opened.
func TestTenantFilter(t *testing.T) {
	t.Parallel()
	ring := inspector.NewRing(inspector.RingOptions{})
	insp := inspector.New(inspector.Options{Store: ring})
	for i, tenant := range []string{"acme", "beta", "acme", ""} {
		ring.Add(webhooks.Result{ID: "same", Name: "issues", Status: 200, Verified: true, Tenant: tenant,
			Payload: []byte(`{"n":` + string(rune('0'+i)) + `}`), ReceivedAt: time.Now()})
	}
	list := func(q string) []struct{ Key, Tenant string } {
		rec := httptest.NewRecorder()
		insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/deliveries?"+q, nil))
		var p struct {
			Rows []struct{ Key, Tenant string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return p.Rows
	}
	if rows := list("tenant=beta"); len(rows) != 1 || rows[0].Tenant != "beta" || rows[0].Key != "d:beta/same" {
		t.Errorf("tenant=beta: %+v", rows)
	}
	if rows := list(""); len(rows) != 4 || rows[0].Key != "d:same" || rows[2].Key != "d:beta/same" {
		t.Errorf("all: %+v, want the four, newest first", rows)
	}
	r, err := ring.Get(t.Context(), "beta/same")
	if err != nil || r.Tenant != "beta" {
		t.Errorf("Get beta/same: %+v %v", r.Tenant, err)
	}
}
