package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// authRecorder is an API that answers 201 to everything and records each
// request's Authorization.
type authRecorder struct {
	mu   sync.Mutex
	auth []string
}

func (r *authRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.auth = append(r.auth, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (r *authRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// noInstallation is payload without its "installation" member, as a
// repository's or organization's own hook sends it.
func noInstallation(t *testing.T, payload []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "installation")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClientTenant: Client acts, in this order, as the delivery's
// installation, the tenant's installation, the tenant's token; at the
// tenant's API root when it has one; it logs which; and with none of them it
// fails with ErrNoCredentials saying what to configure.
func TestClientTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
	// A self-hosted forge of one tenant: the same app, another installation.
	selfHosted := forgetest.New(t, forgetest.Options{AppID: testAppID, PublicKey: &testKey().PublicKey, SecondaryLimit: -1})
	selfHosted.AddInstallation(77)
	rec := &authRecorder{}
	tokenAPI := httptest.NewServer(rec)
	t.Cleanup(tokenAPI.Close)
	tenants := webhooks.StaticTenants{
		"inst":      {Secrets: []string{"s"}, Installation: testInstallation},
		"token":     {Secrets: []string{"s"}, Token: "tenant-token-0123", APIURL: tokenAPI.URL + "/api/v3/"},
		"both":      {Secrets: []string{"s"}, Installation: testInstallation, Token: "unused-token"},
		"hosted":    {Secrets: []string{"s"}, Installation: 77, APIURL: selfHosted.URL},
		"nothing":   {Secrets: []string{"s"}},
		"badapiurl": {Secrets: []string{"s"}, Token: "t", APIURL: "ftp://x"},
	}
	a := e.app(func(o *app.Options) { o.Tenants = tenants })
	bare := e.app(nil)
	withInstallation, without := commentDelivery(testInstallation, e.forge.URL), noInstallation(t, commentDelivery(0, e.forge.URL))
	ctxOf := func(tenant string, payload []byte) context.Context {
		return webhooks.ContextWithDelivery(context.Background(), webhooks.Delivery{ID: "d-" + tenant, Name: "issue_comment", Payload: payload, Tenant: tenant})
	}

	for _, tc := range []struct {
		name, tenant string
		payload      []byte
		api          string // where the comment goes
		uses         string // the debug log's "uses"
	}{
		{"delivery's installation first", "both", withInstallation, e.forge.URL, "the delivery's installation"},
		{"delivery's installation, no tenant", "", withInstallation, e.forge.URL, "the delivery's installation"},
		{"tenant's installation", "inst", without, e.forge.URL, "the tenant's installation"},
		{"installation before token", "both", without, e.forge.URL, "the tenant's installation"},
		{"self-hosted installation", "hosted", without, selfHosted.URL, "the tenant's installation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.Client(ctxOf(tc.tenant, tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, tc.api+"/repos/octo/site/issues/1/comments", strings.NewReader(`{"body":"hi"}`))
			req.Header.Set("Content-Type", "application/json")
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				t.Fatalf("comment: %d", res.StatusCode)
			}
			if !strings.Contains(e.logs.String(), `uses="`+tc.uses+`"`) {
				t.Errorf("the debug log does not say %q:\n%s", tc.uses, e.logs)
			}
		})
	}
	if toks := selfHosted.Tokens(); len(toks) != 1 || toks[0].Installation != 77 {
		t.Errorf("the self-hosted forge issued %+v, want one token of installation 77", toks)
	}
	for _, tok := range e.forge.Tokens() {
		if tok.Installation == 77 {
			t.Error("installation 77's token was asked of the app's API, not the tenant's")
		}
	}

	// The tenant's token, at the tenant's API root, only there.
	c, err := a.Client(ctxOf("token", without))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{tokenAPI.URL + "/api/v3/repos/octo/site/issues/1/comments", e.forge.URL + "/repos/octo/site/issues/1/comments"} {
		res, err := c.Post(u, "application/json", strings.NewReader(`{"body":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if got := rec.seen(); len(got) != 1 || got[0] != "POST /api/v3/repos/octo/site/issues/1/comments token tenant-token-0123" {
		t.Errorf("the tenant's API saw %q, want one request with 'token tenant-token-0123'", got)
	}
	if !strings.Contains(e.logs.String(), `uses="the tenant's token"`) || strings.Contains(e.logs.String(), "tenant-token-0123") {
		t.Errorf("the log says not which, or says the token:\n%s", e.logs)
	}

	for _, tc := range []struct {
		name   string
		a      *app.App
		tenant string
		is     []error
		says   string
	}{
		{"tenant without either", a, "nothing", []error{app.ErrNoCredentials, app.ErrNoInstallation}, `set an installation or a token for tenant "nothing" (installation: or token: in the tenants file`},
		{"no tenant", a, "", []error{app.ErrNoCredentials, app.ErrNoInstallation}, "receive it as a tenant's"},
		{"no Options.Tenants", bare, "inst", []error{app.ErrNoCredentials}, "set app.Options.Tenants"},
		{"unknown tenant", a, "gone", []error{webhooks.ErrUnknownTenant}, `tenant "gone"`},
		{"bad API URL", a, "badapiurl", nil, "API URL is not http(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Client(ctxOf(tc.tenant, without))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want one saying %q", err, tc.says)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("error %v is not %v", err, target)
				}
			}
			if errors.Is(err, app.ErrNoCredentials) && !strings.Contains(err.Error(), "issue_comment.created") {
				t.Errorf("the error does not name the event: %v", err)
			}
			// Only missing credentials are final: a retry cannot cure them,
			// while a tenant source's failure may heal.
			if got, want := webhooks.IsPermanent(err), errors.Is(err, app.ErrNoCredentials); got != want {
				t.Errorf("webhooks.IsPermanent(%v) = %v, want %v", err, got, want)
			}
		})
	}
}

// TestClientTenantEndToEnd: a tenant's hook (a delivery that names no
// installation) over real HTTP to /t/{tenant}/hooks; the handler's Client
// posts a comment as the tenant's installation, read through the receiver's
// own Tenants (its cache).
func TestClientTenantEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
	ts := webhooks.NewTenants(webhooks.StaticTenants{"acme": {Secrets: []string{"acme-secret-0123456789"}, Installation: testInstallation}}, webhooks.TenantsOptions{})
	a := e.app(func(o *app.Options) { o.Tenants = ts })
	wh, err := webhooks.New(webhooks.Options{Tenants: ts, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	wh.On("issue_comment.created", func(ctx context.Context, ev emitter.Event) error {
		c, err := a.Client(ctx)
		if err == nil {
			_, err = e.comment(ctx, c, "answered for acme")
		}
		done <- err
		return err
	})
	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks", Timeout: -1}))
	t.Cleanup(srv.Close)
	payload := noInstallation(t, commentDelivery(0, e.forge.URL))
	sig, _ := signing.Sign("acme-secret-0123456789", payload)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/t/acme/hooks", strings.NewReader(string(payload)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issue_comment")
	req.Header.Set(webhooks.HeaderDelivery, "e2e-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("delivery: %d", res.StatusCode)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if toks := e.forge.Tokens(); len(toks) != 1 || toks[0].Installation != testInstallation {
		t.Errorf("tokens issued: %+v", toks)
	}
}

// TestClientTenantInline: tenants, Client and the inline middleware
// together, as a function platform runs them: each tenant's delivery (naming
// no installation) is answered once its handler returned; a tenant with an
// installation or a token gets its comment posted, answered 200; a tenant
// with neither makes Client's final error, answered as any failed handler
// (500, so that the forge's delivery log shows it).
func TestClientTenantInline(t *testing.T) {
	t.Parallel()
	const token = "inline-tenant-token-0123"
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1, Token: token})
	ts := webhooks.NewTenants(webhooks.StaticTenants{
		"inst":    {Secrets: []string{"inst-secret-0123456789"}, Installation: testInstallation},
		"token":   {Secrets: []string{"token-secret-0123456789"}, Token: token},
		"nothing": {Secrets: []string{"nothing-secret-0123456789"}},
	}, webhooks.TenantsOptions{})
	a := e.app(func(o *app.Options) { o.Tenants = ts })
	wh, err := webhooks.New(webhooks.Options{Tenants: ts, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string]error{}
	wh.On("issue_comment.created", func(ctx context.Context, ev emitter.Event) error {
		d, _ := webhooks.DeliveryFrom(ctx)
		c, err := a.Client(ctx)
		if err == nil {
			_, err = e.comment(ctx, c, "answered for "+d.Tenant)
		}
		mu.Lock()
		handled[d.Tenant] = err
		mu.Unlock()
		return err
	})
	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks", Inline: true}))
	t.Cleanup(srv.Close)
	payload := noInstallation(t, commentDelivery(0, e.forge.URL))
	for _, tc := range []struct {
		tenant, secret string
		status         int
		auth           string // the comment's Authorization: its scheme, or the whole header
	}{
		{"inst", "inst-secret-0123456789", http.StatusOK, "Bearer fit_"},
		{"token", "token-secret-0123456789", http.StatusOK, "token " + token},
		{"nothing", "nothing-secret-0123456789", http.StatusInternalServerError, ""},
	} {
		t.Run(tc.tenant, func(t *testing.T) {
			sig, _ := signing.Sign(tc.secret, payload)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/t/"+tc.tenant+"/hooks", strings.NewReader(string(payload)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(webhooks.HeaderEvent, "issue_comment")
			req.Header.Set(webhooks.HeaderDelivery, "inline-"+tc.tenant)
			req.Header.Set(webhooks.HeaderSignature, sig)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			// Inline: the handler has returned by the answer.
			mu.Lock()
			herr, ran := handled[tc.tenant]
			mu.Unlock()
			if res.StatusCode != tc.status || !ran {
				t.Fatalf("answered %d (handler ran: %v, error %v), want %d", res.StatusCode, ran, herr, tc.status)
			}
			var auths []string
			for _, r := range e.forge.Requests() {
				if r.Operation == "issues/create-comment" && strings.Contains(string(r.Body), "answered for "+tc.tenant) {
					auths = append(auths, r.Authorization)
				}
			}
			if tc.auth == "" {
				if !webhooks.IsPermanent(herr) || !errors.Is(herr, app.ErrNoCredentials) || len(auths) != 0 {
					t.Errorf("handler's error %v (final %v), comments made with %q; want a final ErrNoCredentials and none", herr, webhooks.IsPermanent(herr), auths)
				}
				return
			}
			if herr != nil || len(auths) != 1 || !strings.HasPrefix(auths[0], tc.auth) {
				t.Errorf("handler's error %v, comments made with %q; want one with %q", herr, auths, tc.auth)
			}
		})
	}
}
