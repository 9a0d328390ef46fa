package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/webhooks"
)

// TestTenantsMadeUpTargets: a library SecretSource that answers by path,
// behind a small cache; a flood of deliveries on a known tenant's path with
// random X-Forge-Hook-Installation-Target-* values (as anyone may send),
// beside valid deliveries of that tenant and another: no valid delivery is
// answered 503, the flood evicts no key a delivery verified with, and the
// source is called at most the burst plus LookupRate a second.
func TestTenantsMadeUpTargets(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	src := webhooks.SecretSourceFunc(func(ctx context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
		calls.Add(1)
		return testTenants.Lookup(ctx, webhooks.TenantKey{Path: k.Path})
	})
	const rate, burst = 20, 4
	url, _ := tenantServer(t, src, webhooks.TenantsOptions{CacheSize: 8, CacheTTL: time.Hour, MaxLookups: burst, LookupRate: rate},
		webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	real := map[string][]string{
		"acme": {webhooks.HeaderTargetType, "organization", webhooks.HeaderTargetID, "1001"},
		"beta": {webhooks.HeaderTargetType, "repository", webhooks.HeaderTargetID, "2002"},
	}
	secret := map[string]string{"acme": "acme-current-secret-0123", "beta": "beta-secret-0123456789ab"}
	// Each tenant's hook has delivered before the flood: its key verified.
	for _, name := range []string{"acme", "beta"} {
		if code, body, _ := postTenant(t, url+"/t/"+name+"/hooks", secret[name], name+"-first", real[name]...); code != 200 {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
	before := calls.Load()
	begin := time.Now()

	stop := make(chan struct{})
	var flood sync.WaitGroup
	var sent, unavailable atomic.Int64
	for g := range 6 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, _, _ := postTenant(t, url+"/t/acme/hooks", "not-acme-secret-01234567", fmt.Sprintf("f%d-%d", g, i),
					webhooks.HeaderTargetType, "organization", webhooks.HeaderTargetID, fmt.Sprint(rand.Int64()))
				sent.Add(1)
				if code == 503 {
					unavailable.Add(1)
				}
			}
		}()
	}
	for i := range 200 {
		name := []string{"acme", "beta"}[i%2]
		if code, body, _ := postTenant(t, url+"/t/"+name+"/hooks", secret[name], fmt.Sprintf("%s-%d", name, i), real[name]...); code != 200 {
			t.Errorf("valid delivery %s-%d during the flood: %d %s", name, i, code, body)
		}
	}
	close(stop)
	flood.Wait()
	elapsed := time.Since(begin)
	made := calls.Load() - before
	if bound := burst + int64(rate*elapsed.Seconds()) + 1; made > bound {
		t.Errorf("the source was called %d times in %v for made-up keys, want at most %d (burst %d + %d/s)", made, elapsed, bound, burst, rate)
	}
	if sent.Load() < 50 || unavailable.Load() == 0 {
		t.Errorf("the flood: %d sent, %d answered 503; want enough to pass LookupRate", sent.Load(), unavailable.Load())
	}
	t.Logf("flood: %d deliveries with made-up targets in %v, %d answered 503, %d source calls", sent.Load(), elapsed.Round(time.Millisecond), unavailable.Load(), made)
}

// TestTenantsVerifiedKeyRefreshed: a key a delivery verified with is asked
// again in the background as its answer ages and, once expired, is looked up
// with places of its own: while made-up keys have used up LookupRate, its
// deliveries are still answered.
func TestTenantsVerifiedKeyRefreshed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	src := webhooks.SecretSourceFunc(func(ctx context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
		calls.Add(1)
		return testTenants.Lookup(ctx, webhooks.TenantKey{Path: k.Path})
	})
	const ttl = 40 * time.Millisecond
	url, _ := tenantServer(t, src, webhooks.TenantsOptions{CacheTTL: ttl, MaxLookups: 2, LookupRate: 0.001},
		webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	if code, body, _ := postTenant(t, url+"/t/acme/hooks", "acme-current-secret-0123", "v0"); code != 200 {
		t.Fatalf("first: %d %s", code, body)
	}
	// The one remaining place of made-up keys, taken; the next is refused.
	postTenant(t, url+"/t/beta/hooks", "wrong-secret-0123456789a", "m1", webhooks.HeaderTargetID, "1")
	if code, _, _ := postTenant(t, url+"/t/beta/hooks", "wrong-secret-0123456789a", "m2", webhooks.HeaderTargetID, "2"); code != 503 {
		t.Fatalf("a made-up key past LookupRate: %d, want 503", code)
	}
	// For ten lifetimes of a cached answer, the verified key is answered.
	for i, end := 0, time.Now().Add(10*ttl); time.Now().Before(end); i++ {
		if code, body, _ := postTenant(t, url+"/t/acme/hooks", "acme-current-secret-0123", fmt.Sprint("v", i+1)); code != 200 {
			t.Fatalf("verified key after %d deliveries: %d %s", i, code, body)
		}
	}
	if n := calls.Load(); n < 3 {
		t.Errorf("%d source calls: the verified key's answer was not asked again", n)
	}
}

// TestTenantsLookupByName: Tenants.Lookup (a verified delivery's tenant, read
// by name, as package app does) is not held to LookupRate, which Resolve
// (a key as it arrives) is; it returns the tenant whole.
func TestTenantsLookupByName(t *testing.T) {
	t.Parallel()
	src := webhooks.StaticTenants{
		"acme": {Secrets: []string{"acme-secret-0123456789"}, Installation: 42, Token: "tok", APIURL: "https://forge.example/api/v3"},
		"beta": {Secrets: []string{"beta-secret-0123456789"}},
	}
	ts := webhooks.NewTenants(src, webhooks.TenantsOptions{MaxLookups: 1, LookupRate: 0.001})
	ctx := context.Background()
	if _, err := ts.Resolve(ctx, webhooks.TenantKey{Path: "beta", TargetID: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Resolve(ctx, webhooks.TenantKey{Path: "beta", TargetID: "2"}); err == nil || !strings.Contains(err.Error(), "LookupRate") {
		t.Fatalf("a second new key past LookupRate: %v", err)
	}
	tn, err := ts.Lookup(ctx, webhooks.TenantKey{Path: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if tn.Name != "acme" || tn.Installation != 42 || tn.Token != "tok" || tn.APIURL != "https://forge.example/api/v3" || len(tn.Secrets) != 1 {
		t.Errorf("Lookup: %+v", tn)
	}
	var none *webhooks.Tenants
	if _, err := none.Lookup(ctx, webhooks.TenantKey{Path: "acme"}); !errors.Is(err, webhooks.ErrUnknownTenant) {
		t.Errorf("a nil Tenants: %v", err)
	}
}
