package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestServeTenantsAnswer: serve --tenants with a tenant that names an
// installation and one with a token and its own API root; a handler given
// the receiver's tenants (Webhooks.Tenants) answers each tenant's delivery,
// which names no installation, through app.Client: acme as installation 42
// on the forge, beta with its token on its API and nowhere else. After a
// SIGHUP that moves acme to installation 43, acme answers as 43.
func TestServeTenantsAnswer(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forge := forgetest.New(t, forgetest.Options{AppID: "77", PublicKey: &key.PublicKey, SecondaryLimit: -1})
	forge.AddInstallation(42)
	forge.AddInstallation(43)
	var mu sync.Mutex
	var betaAuth []string
	betaAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		betaAuth = append(betaAuth, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer betaAPI.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	tenants := func(acmeInstallation int) string {
		return fmt.Sprintf(`tenants:
  acme:
    secrets: ["acme-current-secret-01"]
    installation: %d
  beta:
    secrets: ["beta-current-secret-01"]
    token: {env: BETA_TOKEN}
    api_url: %s/api/v3
`, acmeInstallation, betaAPI.URL) + tenantsEnd
	}
	if err := os.WriteFile(file, []byte(tenants(42)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BETA_TOKEN": "beta-token-0123456789"}
	setup := func(wh *webhooks.Webhooks) {
		a, err := app.New(app.Options{AppID: "77", Key: key, APIURL: forge.URL, Tenants: wh.Tenants()})
		if err != nil {
			t.Error(err)
			return
		}
		wh.On("issue_comment.created", func(ctx context.Context, e emitter.Event) error {
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			d, _ := webhooks.DeliveryFrom(ctx)
			api := forge.URL
			if d.Tenant == "beta" {
				api = betaAPI.URL + "/api/v3"
			}
			res, err := c.Post(api+"/repos/octo/site/issues/1/comments", "application/json", strings.NewReader(`{"body":"triaged"}`))
			if err != nil {
				return err
			}
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				return fmt.Errorf("comment: %d", res.StatusCode)
			}
			return nil
		})
	}
	sv := start(t, &cli{getenv: func(k string) string { return env[k] }, setup: setup}, "serve", "--addr", "127.0.0.1:0", "--tenants", file, "--path", "/t/{tenant}/hooks")
	base := "http://" + sv.addr
	body := func(id string) []byte { return []byte(`{"action":"created","comment":{"body":"` + id + `"}}`) }
	send := func(tenant, secret, id string) {
		t.Helper()
		if code, ans := deliverSigned(t, base+"/t/"+tenant+"/hooks", secret, "issue_comment", id, body(id)); code != 200 {
			t.Fatalf("%s %s: %d %s", tenant, id, code, ans)
		}
	}
	tokensOf := func(id int64) int {
		n := 0
		for _, tok := range forge.Tokens() {
			if tok.Installation == id {
				n++
			}
		}
		return n
	}
	send("acme", "acme-current-secret-01", "a1")
	send("beta", "beta-current-secret-01", "b1")
	if tokensOf(42) != 1 {
		t.Errorf("tokens issued: %+v, want one of installation 42", forge.Tokens())
	}
	mu.Lock()
	if len(betaAuth) != 1 || betaAuth[0] != "/api/v3/repos/octo/site/issues/1/comments token beta-token-0123456789" {
		t.Errorf("beta's API saw %q", betaAuth)
	}
	mu.Unlock()

	if err := os.WriteFile(file, []byte(tenants(43)), 0o600); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(sv.stderr.String(), "tenants file reloaded")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitUntil(t, "the reload", func() bool { return strings.Count(sv.stderr.String(), "tenants file reloaded") > before })
	send("acme", "acme-current-secret-01", "a2")
	if tokensOf(43) != 1 {
		t.Errorf("after the reload, tokens issued: %+v, want one of installation 43", forge.Tokens())
	}
	if strings.Contains(sv.stderr.String(), "beta-token-0123456789") {
		t.Error("the token is in the log")
	}
}
