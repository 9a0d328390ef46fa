package inbox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxTenants: a tenant is stored with its delivery, seen by its
// handlers, listed and filtered; one delivery id (and one body) under two
// tenants is stored for each, and a repeat within a tenant is a duplicate;
// Forward passes the tenant on and drops one the sender wrote.
func TestInboxTenants(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]string{} // tenant/id -> forwarded X-Forge-Tenant
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ran[r.Header.Get(webhooks.HeaderTenant)+"/"+r.Header.Get(webhooks.HeaderDelivery)] = r.Header.Get(webhooks.HeaderTenant)
		mu.Unlock()
	}))
	defer target.Close()
	wh := newWebhooks(t)
	var infos sync.Map
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		infos.Store(info.Tenant+"/"+info.ID, info.Tenant)
		return nil
	})
	wh.OnAny(Forward(target.URL, target.Client()))
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	ctx := context.Background()
	body := payload("same")
	hdr := http.Header{webhooks.HeaderTenant: {"mallory"}}
	for _, tc := range []struct {
		tenant, id string
		want       webhooks.EnqueueResult
	}{
		{"acme", "d-1", webhooks.Enqueued},
		{"beta", "d-1", webhooks.Enqueued},
		{"acme", "d-1", webhooks.Duplicate},
		{"", "d-1", webhooks.Enqueued},
		{"beta", "d-2", webhooks.Duplicate}, // beta's body under another id: the replay guard
		{"gamma", "d-2", webhooks.Enqueued},
	} {
		res, err := in.Enqueue(ctx, webhooks.Delivery{ID: tc.id, Name: "issues", Payload: body, Tenant: tc.tenant, Header: hdr})
		if err != nil || res != tc.want {
			t.Fatalf("%s/%s: %v %v, want %v", tc.tenant, tc.id, res, err, tc.want)
		}
	}
	waitFor(t, 10*time.Second, "four deliveries forwarded", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 4
	})
	mu.Lock()
	for _, k := range []string{"acme/d-1", "beta/d-1", "/d-1", "gamma/d-2"} {
		if _, ok := ran[k]; !ok {
			t.Errorf("%s not forwarded with its tenant (forwarded: %v)", k, ran)
		}
		if v, _ := infos.Load(k); v == nil {
			t.Errorf("%s: the handler saw no such tenant", k)
		}
	}
	mu.Unlock()
	recs, err := in.List(ctx, delivery.ListOptions{Tenant: "beta"})
	if err != nil || len(recs) != 1 || recs[0].Tenant != "beta" || recs[0].ID != "d-1" {
		t.Errorf("List beta: %+v %v", recs, err)
	}
	all, _ := in.List(ctx, delivery.ListOptions{})
	if len(all) != 4 {
		t.Errorf("List: %d records, want 4", len(all))
	}
	r, err := in.Get(ctx, "acme/d-1")
	if err != nil || r.Tenant != "acme" {
		t.Errorf("Get acme/d-1: %+v %v", r.Tenant, err)
	}
	r, err = in.Get(ctx, "d-1")
	if err != nil || r.Tenant != "" {
		t.Errorf("Get d-1: %q %v", r.Tenant, err)
	}
}

// TestInboxTenantsRepeatedBodies: without the replay guard, JetStream's own
// duplicate window is keyed by tenant and id too.
func TestInboxTenantsRepeatedBodies(t *testing.T) {
	in := openInbox(t, t.TempDir(), Options{AllowRepeatedBodies: true})
	ctx := context.Background()
	for _, tc := range []struct {
		tenant string
		want   webhooks.EnqueueResult
	}{{"acme", webhooks.Enqueued}, {"beta", webhooks.Enqueued}, {"acme", webhooks.Duplicate}} {
		res, err := in.Enqueue(ctx, webhooks.Delivery{ID: "same", Name: "issues", Payload: payload("x"), Tenant: tc.tenant})
		if err != nil || res != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.tenant, res, err, tc.want)
		}
	}
}

// TestInboxTenantRedeliveryOfADeadLetter: a tenant's delivery made a dead
// letter by a final error (a tenant configured without credentials, say),
// delivered again under its id once the cause is fixed (the forge's
// "Redeliver"), is requeued and runs: the dead letter is found by the
// tenant's key, not by the bare id, which here names another delivery,
// handled, that stays as it is.
func TestInboxTenantRedeliveryOfADeadLetter(t *testing.T) {
	wh := newWebhooks(t)
	var fixed atomic.Bool
	var handled sync.Map // tenant/id -> true
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		d, _ := webhooks.DeliveryFrom(ctx)
		if d.Tenant == "acme" && !fixed.Load() {
			return webhooks.Permanent(errors.New("no installation or token for acme"))
		}
		handled.Store(d.Tenant+"/"+d.ID, true)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, RetryDelays: []time.Duration{time.Hour}})
	ctx := context.Background()
	enqueue := func(tenant string, want webhooks.EnqueueResult) {
		t.Helper()
		res, err := in.Enqueue(ctx, webhooks.Delivery{ID: "d-1", Name: "issues", Payload: payload("d-1 of " + tenant), Tenant: tenant})
		if err != nil || res != want {
			t.Fatalf("%s/d-1: %v %v, want %v", tenant, res, err, want)
		}
	}
	enqueue("", webhooks.Enqueued)
	waitHandled(t, in, "d-1", 10*time.Second)
	enqueue("acme", webhooks.Enqueued)
	waitFor(t, 10*time.Second, "acme's final dead letter", func() bool {
		r, err := in.Get(ctx, "acme/d-1")
		return err == nil && r.Status == delivery.StatusDead && r.Final()
	})
	fixed.Store(true)
	enqueue("acme", webhooks.Requeued)
	waitFor(t, 10*time.Second, "acme/d-1 handled", func() bool { _, ok := handled.Load("acme/d-1"); return ok })
	if r, err := in.Get(ctx, "acme/d-1"); err != nil || r.Status != delivery.StatusHandled || len(r.Attempts) != 2 {
		t.Errorf("acme/d-1 after the redelivery: %v, %d attempts, %v; want handled after 2", r.Status, len(r.Attempts), err)
	}
	if r, err := in.Get(ctx, "d-1"); err != nil || r.Status != delivery.StatusHandled || len(r.Attempts) != 1 {
		t.Errorf("d-1 (no tenant): %v, %d attempts, %v; want handled after 1, untouched", r.Status, len(r.Attempts), err)
	}
}
