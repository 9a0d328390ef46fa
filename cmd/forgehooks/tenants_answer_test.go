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

// TestServeTenantsInboxFinal: serve --tenants with an inbox; a tenant with
// neither an installation nor a token makes app.Client's final error, so its
// delivery is a dead letter after one attempt, while the other tenant's is
// handled. inbox dead names the tenant and says "dead (final)"; inbox show
// of "tenant/id" says the tenant and the final error.
func TestServeTenantsInboxFinal(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forge := forgetest.New(t, forgetest.Options{AppID: "78", PublicKey: &key.PublicKey, SecondaryLimit: -1})
	forge.AddInstallation(42)
	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	if err := os.WriteFile(file, []byte(`tenants:
  acme:
    secrets: ["acme-current-secret-01"]
    installation: 42
  beta:
    secrets: ["beta-current-secret-01"]
`+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	setup := func(wh *webhooks.Webhooks) {
		a, err := app.New(app.Options{AppID: "78", Key: key, APIURL: forge.URL, Tenants: wh.Tenants()})
		if err != nil {
			t.Error(err)
			return
		}
		wh.On("issue_comment.created", func(ctx context.Context, e emitter.Event) error {
			c, err := a.Client(ctx)
			if err != nil {
				return err
			}
			res, err := c.Post(forge.URL+"/repos/octo/site/issues/1/comments", "application/json", strings.NewReader(`{"body":"triaged"}`))
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
	inboxDir := filepath.Join(dir, "inbox")
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--tenants", file, "--path", "/t/{tenant}/hooks",
		"--inbox", inboxDir, "--retry-delays", "10ms,10ms,10ms")
	base := "http://" + sv.addr
	for _, d := range []struct{ tenant, secret, id string }{
		{"acme", "acme-current-secret-01", "a1"},
		{"beta", "beta-current-secret-01", "b1"},
	} {
		body := []byte(`{"action":"created","comment":{"body":"` + d.id + `"}}`)
		if code, ans := deliverSigned(t, base+"/t/"+d.tenant+"/hooks", d.secret, "issue_comment", d.id, body); code != http.StatusAccepted {
			t.Fatalf("%s %s: %d %s, want 202", d.tenant, d.id, code, ans)
		}
	}
	waitUntil(t, "acme's comment and beta's dead letter", func() bool {
		return len(forge.Comments()) == 1 && strings.Contains(sv.stderr.String(), "dead letters")
	})
	if code := sv.stop(); code != exitOK {
		t.Fatalf("serve exited %d:\n%s", code, sv.stderr)
	}
	code, out, errOut := runCmd(t, "", nil, "inbox", "dead", "--inbox", inboxDir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 || !strings.HasPrefix(lines[0], "TENANT") || !strings.HasPrefix(lines[1], "beta ") ||
		!strings.Contains(lines[1], " b1 ") || !strings.Contains(lines[1], "dead (final)") {
		t.Errorf("inbox dead: %d, want one row of tenant beta's b1, dead (final):\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", nil, "inbox", "show", "beta/b1", "--inbox", inboxDir)
	if code != exitOK || !strings.Contains(out, "tenant:   beta") || !strings.Contains(out, "status:   dead (final)") ||
		!strings.Contains(out, "final error (not retried): ") || !strings.Contains(out, `set an installation or a token for tenant "beta"`) {
		t.Errorf("inbox show beta/b1: %d\n%s%s", code, out, errOut)
	}
	// retry --dead takes each dead letter by its key, the tenant's
	// "beta/b1", not by the bare id another tenant's delivery may share.
	code, out, errOut = runCmd(t, "", nil, "inbox", "retry", "--dead", "--inbox", inboxDir)
	if code != exitOK || !strings.HasPrefix(out, "beta/b1: stored again") {
		t.Errorf("inbox retry --dead: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", nil, "inbox", "show", "beta/b1", "--inbox", inboxDir)
	if code != exitOK || !strings.Contains(out, "status:   queued") {
		t.Errorf("inbox show beta/b1 after the retry: %d\n%s%s", code, out, errOut)
	}
}
