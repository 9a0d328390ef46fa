package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

var testTenants = webhooks.StaticTenants{
	"acme":  {Secrets: []string{"acme-current-secret-0123", "acme-previous-secret-012"}, Hooks: []string{"12345"}},
	"beta":  {Secrets: []string{"beta-secret-0123456789ab"}},
	"gamma": {Secrets: []string{"gamma-secret-0123456789a"}, Hooks: []string{"777"}},
}

// countingSource counts the calls of a SecretSource.
type countingSource struct {
	src   webhooks.SecretSource
	calls atomic.Int64
}

func (c *countingSource) Lookup(ctx context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
	c.calls.Add(1)
	return c.src.Lookup(ctx, k)
}

// postTenant sends a delivery signed with secret to url; header pairs are added.
func postTenant(t *testing.T, url, secret, id string, header ...string) (int, string, http.Header) {
	t.Helper()
	body := []byte(`{"action":"opened","n":"` + id + `"}`)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issues")
	req.Header.Set(webhooks.HeaderDelivery, id)
	sig, _ := signing.Sign(secret, body)
	req.Header.Set(webhooks.HeaderSignature, sig)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// tenantServer serves a Webhooks with tenants over real HTTP and records the
// tenant each handler saw, by delivery id.
func tenantServer(t *testing.T, src webhooks.SecretSource, to webhooks.TenantsOptions, mo webhooks.MiddlewareOptions, mount func(*webhooks.Middleware) http.Handler) (string, *sync.Map) {
	t.Helper()
	wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(src, to)})
	if err != nil {
		t.Fatal(err)
	}
	seen := &sync.Map{}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		seen.Store(e.ID, info.Tenant)
		return nil
	})
	mw := webhooks.NewMiddleware(wh, mo)
	var h http.Handler = mw
	if mount != nil {
		h = mount(mw)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		wh.Close(context.Background())
	})
	return srv.URL, seen
}

// TestTenantsOverHTTP: three tenants on /t/{tenant}/hooks, one with two
// secrets; each verifies with its own, another's is 400, an unknown tenant is
// 404 with the very answer of an unknown path, and the handlers see the
// tenant. By hook id on a path without a tenant, too.
func TestTenantsOverHTTP(t *testing.T) {
	src := &countingSource{src: testTenants}
	url, seen := tenantServer(t, src, webhooks.TenantsOptions{}, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	plainURL, _ := tenantServer(t, testTenants, webhooks.TenantsOptions{}, webhooks.MiddlewareOptions{Path: "/somewhere/else"}, nil)
	for _, tc := range []struct {
		name, path, secret, id string
		header                 []string
		want                   int
		tenant                 string
	}{
		{"acme current", "/t/acme/hooks", "acme-current-secret-0123", "a1", nil, 200, "acme"},
		{"acme previous", "/t/acme/hooks", "acme-previous-secret-012", "a2", nil, 200, "acme"},
		{"beta", "/t/beta/hooks/", "beta-secret-0123456789ab", "b1", nil, 200, "beta"},
		{"gamma", "/t/gamma/hooks", "gamma-secret-0123456789a", "g1", nil, 200, "gamma"},
		{"acme with beta's secret", "/t/acme/hooks", "beta-secret-0123456789ab", "x1", nil, 400, ""},
		{"acme with a hook id it does not list", "/t/acme/hooks", "acme-current-secret-0123", "x2", []string{webhooks.HeaderHookID, "999"}, 404, ""},
		{"acme with its hook id", "/t/acme/hooks", "acme-current-secret-0123", "a3", []string{webhooks.HeaderHookID, "12345"}, 200, "acme"},
		{"unknown tenant", "/t/nope/hooks", "acme-current-secret-0123", "x3", nil, 404, ""},
		{"tenant key too long", "/t/" + strings.Repeat("a", 200) + "/hooks", "x", "x4", nil, 404, ""},
		{"repeated hook id", "/t/acme/hooks", "acme-current-secret-0123", "x5", []string{webhooks.HeaderHookID, "12345", webhooks.HeaderHookID, "12345"}, 404, ""},
		{"empty segment", "/t//hooks", "acme-current-secret-0123", "x6", nil, 404, ""},
		{"other path", "/t/acme/other", "acme-current-secret-0123", "x7", nil, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := postTenant(t, url+tc.path, tc.secret, tc.id, tc.header...)
			if code != tc.want {
				t.Fatalf("status %d (%s), want %d", code, body, tc.want)
			}
			if code == 404 {
				// What a Middleware answers for a path it does not serve.
				code2, body2, hdr2 := postTenant(t, plainURL+tc.path, tc.secret, tc.id)
				if code2 != 404 || body2 != body || hdr2.Get("Content-Type") != hdr.Get("Content-Type") || hdr2.Get("Content-Length") != hdr.Get("Content-Length") {
					t.Errorf("unknown tenant answered %d %q %v; an unknown path %d %q %v", code, body, hdr, code2, body2, hdr2)
				}
			}
			got, ran := seen.Load(tc.id)
			if tc.tenant == "" && ran || tc.tenant != "" && got != tc.tenant {
				t.Errorf("handler saw tenant %v (ran %v), want %q", got, ran, tc.tenant)
			}
		})
	}
	// Each key asked once: acme, acme+999, acme+12345, beta, gamma, nope.
	if n := src.calls.Load(); n != 6 {
		t.Errorf("the source was asked %d times, want 6 (cached)", n)
	}

	byHook, seen2 := tenantServer(t, testTenants, webhooks.TenantsOptions{}, webhooks.MiddlewareOptions{Path: "/hooks"}, nil)
	if code, body, _ := postTenant(t, byHook+"/hooks", "gamma-secret-0123456789a", "h1", webhooks.HeaderHookID, "777"); code != 200 {
		t.Fatalf("by hook id: %d %s", code, body)
	}
	if v, _ := seen2.Load("h1"); v != "gamma" {
		t.Errorf("by hook id: tenant %v", v)
	}
	if code, _, _ := postTenant(t, byHook+"/hooks", "gamma-secret-0123456789a", "h2"); code != 404 {
		t.Errorf("no key: %d, want 404", code)
	}
}

// TestTenantsUnderServeMux: AnyPath under a ServeMux pattern reads the
// tenant from the mux's path value; with NotFound, an unknown tenant gets the
// mux's own answer to an unknown path.
func TestTenantsUnderServeMux(t *testing.T) {
	url, seen := tenantServer(t, testTenants, webhooks.TenantsOptions{PathValue: "customer", NotFound: http.NotFoundHandler()}, webhooks.MiddlewareOptions{}, func(mw *webhooks.Middleware) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("POST /c/{customer}/events", mw.AnyPath())
		return mux
	})
	if code, body, _ := postTenant(t, url+"/c/beta/events", "beta-secret-0123456789ab", "m1"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if v, _ := seen.Load("m1"); v != "beta" {
		t.Errorf("tenant %v", v)
	}
	if code, _, _ := postTenant(t, url+"/c/beta/events", "acme-current-secret-0123", "m2"); code != 400 {
		t.Errorf("wrong secret: %d", code)
	}
	// An unknown tenant is answered as the mux answers an unknown path.
	code, body, hdr := postTenant(t, url+"/c/nobody/events", "beta-secret-0123456789ab", "m3")
	code2, body2, hdr2 := postTenant(t, url+"/elsewhere", "beta-secret-0123456789ab", "m4")
	if code != 404 || body != body2 || code2 != 404 || hdr.Get("Content-Type") != hdr2.Get("Content-Type") {
		t.Errorf("unknown tenant %d %q %v; unknown path %d %q %v", code, body, hdr, code2, body2, hdr2)
	}
}

// TestTenantsSourceFailing: a source that fails or is slow is 503 with
// Retry-After, never 2xx, and is asked again next time (a failure is not
// cached); a known answer after that is 200.
func TestTenantsSourceFailing(t *testing.T) {
	var mode atomic.Int32 // 0 fail, 1 hang, 2 answer
	var calls atomic.Int64
	src := webhooks.SecretSourceFunc(func(ctx context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
		calls.Add(1)
		switch mode.Load() {
		case 0:
			return webhooks.Tenant{}, errors.New("database down")
		case 1:
			<-ctx.Done()
			return webhooks.Tenant{}, ctx.Err()
		}
		return testTenants.Lookup(ctx, k)
	})
	url, _ := tenantServer(t, src, webhooks.TenantsOptions{LookupTimeout: 100 * time.Millisecond}, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	for i, m := range []int32{0, 1, 0} {
		mode.Store(m)
		code, body, hdr := postTenant(t, url+"/t/beta/hooks", "beta-secret-0123456789ab", fmt.Sprint("f", i))
		if code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "secrets") {
			t.Errorf("mode %d: %d %q Retry-After %q, want 503", m, code, body, hdr.Get("Retry-After"))
		}
	}
	mode.Store(2)
	if code, body, _ := postTenant(t, url+"/t/beta/hooks", "beta-secret-0123456789ab", "ok"); code != 200 {
		t.Errorf("after recovery: %d %s", code, body)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d calls, want 4 (failures are not cached)", n)
	}
	// A source returning a tenant without a secret is a failing source.
	bad := webhooks.SecretSourceFunc(func(context.Context, webhooks.TenantKey) (webhooks.Tenant, error) {
		return webhooks.Tenant{Name: "x"}, nil
	})
	url2, _ := tenantServer(t, bad, webhooks.TenantsOptions{}, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	if code, _, _ := postTenant(t, url2+"/t/x/hooks", "anything-at-all-0123", "b"); code != 503 {
		t.Errorf("tenant without secrets: %d, want 503", code)
	}
}

// TestTenantsCache: answers, known and unknown, are kept up to CacheSize
// each for CacheTTL; concurrent requests for one key ask the source once.
func TestTenantsCache(t *testing.T) {
	src := &countingSource{src: testTenants}
	ts := webhooks.NewTenants(src, webhooks.TenantsOptions{CacheSize: 2, CacheTTL: time.Hour})
	ctx := context.Background()
	for _, name := range []string{"acme", "beta", "acme", "beta"} {
		if tn, err := ts.Resolve(ctx, webhooks.TenantKey{Path: name}); err != nil || tn.Name != name {
			t.Fatalf("%s: %v %v", name, tn, err)
		}
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
	// Unknown keys have their own bound: they do not evict the known ones.
	for i := 0; i < 10; i++ {
		if _, err := ts.Resolve(ctx, webhooks.TenantKey{Path: fmt.Sprint("u", i)}); !errors.Is(err, webhooks.ErrUnknownTenant) {
			t.Fatal(err)
		}
	}
	src.calls.Store(0)
	ts.Resolve(ctx, webhooks.TenantKey{Path: "acme"})
	ts.Resolve(ctx, webhooks.TenantKey{Path: "beta"})
	ts.Resolve(ctx, webhooks.TenantKey{Path: "u9"})
	if n := src.calls.Load(); n != 0 {
		t.Errorf("%d calls after unknown keys, want 0: the known ones stayed, and u9", n)
	}
	ts.Resolve(ctx, webhooks.TenantKey{Path: "gamma"}) // evicts acme (least recent)
	ts.Resolve(ctx, webhooks.TenantKey{Path: "acme"})
	if n := src.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2 (gamma, then acme evicted by it)", n)
	}
	ts.Forget()
	ts.Resolve(ctx, webhooks.TenantKey{Path: "acme"})
	if n := src.calls.Load(); n != 3 {
		t.Errorf("%d calls after Forget, want 3", n)
	}

	// TTL.
	short := &countingSource{src: testTenants}
	ts = webhooks.NewTenants(short, webhooks.TenantsOptions{CacheTTL: time.Millisecond})
	ts.Resolve(ctx, webhooks.TenantKey{Path: "acme"})
	time.Sleep(5 * time.Millisecond)
	ts.Resolve(ctx, webhooks.TenantKey{Path: "acme"})
	if n := short.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2 (expired)", n)
	}

	// One call for many concurrent requests of a key.
	release := make(chan struct{})
	var calls atomic.Int64
	slow := webhooks.SecretSourceFunc(func(ctx context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
		calls.Add(1)
		<-release
		return testTenants.Lookup(ctx, k)
	})
	ts = webhooks.NewTenants(slow, webhooks.TenantsOptions{LookupTimeout: time.Minute})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ts.Resolve(ctx, webhooks.TenantKey{Path: "beta"}); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls for 20 concurrent requests, want 1", n)
	}
}

// TestTenantsSecretOptional: with Tenants, New takes no Secret; Sign then
// fails rather than signing with an empty key.
func TestTenantsSecretOptional(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(testTenants, webhooks.TenantsOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wh.Sign([]byte("{}")); !errors.Is(err, webhooks.ErrMissingSecret) {
		t.Errorf("Sign: %v", err)
	}
	if _, err := webhooks.New(webhooks.Options{}); !errors.Is(err, webhooks.ErrMissingSecret) {
		t.Errorf("New without a secret nor tenants: %v", err)
	}
	// VerifyAndReceive with a tenant named uses its secrets.
	body := []byte(`{"action":"opened"}`)
	sig, _ := signing.Sign("beta-secret-0123456789ab", body)
	if err := wh.VerifyAndReceive(context.Background(), webhooks.Delivery{ID: "v", Name: "issues", Payload: body, Signature: sig, Tenant: "beta"}); err != nil {
		t.Errorf("beta: %v", err)
	}
	if err := wh.VerifyAndReceive(context.Background(), webhooks.Delivery{ID: "v", Name: "issues", Payload: body, Signature: sig, Tenant: "acme"}); !errors.Is(err, webhooks.ErrSignatureMismatch) {
		t.Errorf("acme with beta's signature: %v", err)
	}
}

// ExampleNewTenants serves tenants at /t/{tenant}/hooks, each with its own
// secrets, and shows the tenant a handler sees.
func ExampleNewTenants() {
	tenants := webhooks.NewTenants(webhooks.StaticTenants{
		"acme": {Secrets: []string{"acme-current-secret-0123", "acme-previous-secret-012"}},
		"beta": {Secrets: []string{"beta-secret-0123456789ab"}},
	}, webhooks.TenantsOptions{})
	wh, _ := webhooks.New(webhooks.Options{Tenants: tenants})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		fmt.Println("issue opened for", info.Tenant)
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"})

	body := `{"action":"opened"}`
	sig, _ := signing.Sign("acme-previous-secret-012", []byte(body))
	req := httptest.NewRequest("POST", "/t/acme/hooks", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issues")
	req.Header.Set(webhooks.HeaderDelivery, "1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, req)
	fmt.Println(rec.Code)

	req = httptest.NewRequest("POST", "/t/nobody/hooks", strings.NewReader(body))
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// issue opened for acme
	// 200
	// 404 {"error":"Unknown route: POST /t/nobody/hooks"}
}

// FuzzTenantKey: whatever the path and headers, the key read from a request
// has only valid fields when ok, a wildcard segment matches exactly one
// non-empty segment, and a StaticTenants lookup of it names a tenant only
// when that tenant exists.
func FuzzTenantKey(f *testing.F) {
	f.Add("/t/acme/hooks", "12345", "repository", "1")
	f.Add("/t//hooks", "", "", "")
	f.Add("/t/a%2Fb/hooks", "1 2", "\x00", strings.Repeat("9", 200))
	f.Add("/t/acme/hooks/", "777", "organization", "")
	ts := webhooks.NewTenants(testTenants, webhooks.TenantsOptions{CacheSize: 16})
	wh, err := webhooks.New(webhooks.Options{Tenants: ts})
	if err != nil {
		f.Fatal(err)
	}
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"})
	f.Fuzz(func(t *testing.T, path, hook, typ, id string) {
		req, err := http.NewRequest(http.MethodGet, "http://h"+path, nil)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		req.Header[webhooks.HeaderHookID] = []string{hook}
		req.Header[webhooks.HeaderTargetType] = []string{typ}
		req.Header[webhooks.HeaderTargetID] = []string{id}
		rec := httptest.NewRecorder()
		handled := mw.Handle(rec, req)
		tenant := req.PathValue("tenant")
		if handled && (tenant == "" || strings.Contains(tenant, "/")) {
			t.Fatalf("%q matched with tenant %q", path, tenant)
		}
		if !handled && tenant != "" {
			t.Fatalf("%q not matched, yet tenant %q set", path, tenant)
		}
		key, ok := ts.KeyOf(req)
		if ok {
			for _, v := range []string{key.Path, key.HookID, key.TargetType, key.TargetID} {
				if !webhooks.ValidTenantName(v) {
					t.Fatalf("key field %q accepted", v)
				}
			}
			if tn, err := ts.Resolve(context.Background(), key); err == nil {
				if _, exists := testTenants[tn.Name]; !exists || len(tn.Secrets) == 0 {
					t.Fatalf("key %+v resolved to %+v", key, tn)
				}
			}
		}
	})
}

// TestTenantsMaxLookups: a source that hangs, ignoring its context, holds at
// most MaxLookups calls; keys past them are 503 at once, and the calls'
// places come back when the source returns.
func TestTenantsMaxLookups(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	hang := webhooks.SecretSourceFunc(func(_ context.Context, k webhooks.TenantKey) (webhooks.Tenant, error) {
		calls.Add(1)
		<-release
		return testTenants.Lookup(context.Background(), k)
	})
	url, _ := tenantServer(t, hang, webhooks.TenantsOptions{LookupTimeout: 50 * time.Millisecond, MaxLookups: 2}, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}, nil)
	for _, name := range []string{"acme", "beta", "gamma"} {
		code, body, _ := postTenant(t, url+"/t/"+name+"/hooks", "x-secret-0123456789", name)
		if code != 503 || name == "gamma" && !strings.Contains(body, "secrets") {
			t.Errorf("%s: %d %s, want 503", name, code, body)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the source was called %d times, want 2 (gamma refused without a call)", n)
	}
	close(release)
	waitTrue(t, func() bool {
		code, _, _ := postTenant(t, url+"/t/beta/hooks", "beta-secret-0123456789ab", "ok")
		return code == 200
	})
}

// BenchmarkTenantsResolve: a cached key's resolution, what each delivery of
// a known tenant costs beyond one secret's verification.
func BenchmarkTenantsResolve(b *testing.B) {
	ts := webhooks.NewTenants(testTenants, webhooks.TenantsOptions{})
	r := httptest.NewRequest("POST", "/t/acme/hooks", nil)
	r.SetPathValue("tenant", "acme")
	r.Header.Set(webhooks.HeaderHookID, "12345")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		key, _ := ts.KeyOf(r)
		if _, err := ts.Resolve(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

// waitTrue waits until cond holds, for up to 30 s.
func waitTrue(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
