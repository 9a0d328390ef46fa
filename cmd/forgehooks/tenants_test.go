package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// deliverSigned posts a delivery signed with secret to url.
func deliverSigned(t *testing.T, url, secret, event, id string, body []byte) (int, string) {
	t.Helper()
	sig, _ := signing.Sign(secret, body)
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, event)
	r.Header.Set(webhooks.HeaderDelivery, id)
	r.Header.Set(webhooks.HeaderSignature, sig)
	r.Header.Set(webhooks.HeaderTenant, "forged-by-the-sender")
	res, err := (&http.Client{Timeout: testTimeout}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// forwardTarget records the X-Forge-Tenant of each forwarded delivery, by
// delivery id.
type forwardTarget struct {
	mu     sync.Mutex
	tenant map[string]string
}

func (f *forwardTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenant[r.Header.Get(webhooks.HeaderDelivery)] = r.Header.Get(webhooks.HeaderTenant)
}

func (f *forwardTarget) get(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.tenant[id]
	return v, ok
}

// tenantsYAML is a tenants file's tenants, before its end marker.
const tenantsYAML = `tenants:
  acme:
    secrets: ["acme-current-secret-01", "acme-previous-secret-1"]
    hooks: [12345]
  beta:
    secrets: ["env:BETA_SECRET"]
  gamma:
    secrets: ["file:gamma.secret"]
`

// tenantsEnd ends every tenants file.
const tenantsEnd = "end: true\n"

// TestServeTenants: serve --tenants FILE on /t/{tenant}/hooks, with an
// inbox and --forward: three tenants (one with two secrets, one from the
// environment, one from a file) each 202; another tenant's secret 400; an
// unknown tenant 404 with the body an unknown path gets; the tenant in
// 'inbox ls --json', 'inbox ls --tenant' and the forwarded X-Forge-Tenant
// (not the one the sender wrote). SIGHUP with a fourth tenant added: its
// deliveries 202 without a restart; with a broken file the running set
// stays and the log says why.
func TestServeTenants(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	if err := os.WriteFile(file, []byte(tenantsYAML+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gamma.secret"), []byte("gamma-secret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := &forwardTarget{tenant: map[string]string{}}
	fwd := httptest.NewServer(target)
	defer fwd.Close()
	env := map[string]string{"BETA_SECRET": "beta-secret-from-env-1"}
	inboxDir := filepath.Join(dir, "inbox")
	sv := start(t, &cli{getenv: func(k string) string { return env[k] }}, "serve", "--addr", "127.0.0.1:0", "--tenants", file,
		"--path", "/t/{tenant}/hooks", "--inbox", inboxDir, "--forward", fwd.URL, "--retry-delays", "10ms")
	plain := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret)
	base := "http://" + sv.addr

	body := func(id string) []byte { return []byte(`{"action":"opened","n":"` + id + `"}`) }
	for _, tc := range []struct {
		path, secret, id string
		want             int
	}{
		{"/t/acme/hooks", "acme-current-secret-01", "a1", 202},
		{"/t/acme/hooks", "acme-previous-secret-1", "a2", 202},
		{"/t/beta/hooks", "beta-secret-from-env-1", "b1", 202},
		{"/t/gamma/hooks", "gamma-secret-from-file", "g1", 202},
		{"/t/acme/hooks", "beta-secret-from-env-1", "x1", 400},
		{"/t/nope/hooks", "acme-current-secret-01", "x2", 404},
	} {
		code, ans := deliverSigned(t, base+tc.path, tc.secret, "issues", tc.id, body(tc.id))
		if code != tc.want {
			t.Fatalf("%s %s: %d %s, want %d", tc.path, tc.id, code, ans, tc.want)
		}
		if code == 404 {
			code2, ans2 := deliverSigned(t, "http://"+plain.addr+tc.path, testSecret, "issues", tc.id, body(tc.id))
			if code2 != 404 || ans2 != ans {
				t.Errorf("unknown tenant: %q; unknown path: %d %q", ans, code2, ans2)
			}
		}
	}
	// Two tenants may receive one delivery id: each is stored.
	if code, ans := deliverSigned(t, base+"/t/beta/hooks", "beta-secret-from-env-1", "issues", "a1", body("a1")); code != 202 {
		t.Fatalf("beta's a1: %d %s", code, ans)
	}
	if code, _ := deliverSigned(t, base+"/t/beta/hooks", "beta-secret-from-env-1", "issues", "a1", body("a1")); code != 200 {
		t.Fatalf("beta's a1 again: %d, want 200 (duplicate)", code)
	}
	for id, want := range map[string]string{"a2": "acme", "b1": "beta", "g1": "gamma"} {
		waitUntil(t, id+" forwarded", func() bool { _, ok := target.get(id); return ok })
		if got, _ := target.get(id); got != want {
			t.Errorf("%s forwarded with X-Forge-Tenant %q, want %q", id, got, want)
		}
	}

	code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--json", "--inbox", inboxDir)
	if code != 0 {
		t.Fatalf("inbox ls: %d %s", code, errOut)
	}
	var recs []struct{ ID, Tenant string }
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range recs {
		got[r.Tenant+"/"+r.ID] = true
	}
	for _, k := range []string{"acme/a1", "acme/a2", "beta/b1", "gamma/g1", "beta/a1"} {
		if !got[k] {
			t.Errorf("inbox ls --json lacks %s: %s", k, out)
		}
	}
	if len(recs) != 5 {
		t.Errorf("inbox ls: %d deliveries, want 5: %s", len(recs), out)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "ls", "--tenant", "beta", "--inbox", inboxDir)
	if code != 0 || !strings.Contains(out, "TENANT") || strings.Count(out, "beta") != 2 || strings.Contains(out, "acme") {
		t.Errorf("inbox ls --tenant beta: %d\n%s", code, out)
	}

	// SIGHUP: a fourth tenant.
	if code, _ := deliverSigned(t, base+"/t/delta/hooks", "delta-secret-0123456789", "issues", "d1", body("d1")); code != 404 {
		t.Fatalf("delta before the reload: %d, want 404", code)
	}
	added := tenantsYAML + "  delta:\n    secrets: [\"delta-secret-0123456789\"]\n" + tenantsEnd
	if err := os.WriteFile(file, []byte(added), 0o600); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitUntil(t, "the reload", func() bool { return strings.Contains(sv.stderr.String(), "tenants file reloaded") })
	if code, ans := deliverSigned(t, base+"/t/delta/hooks", "delta-secret-0123456789", "issues", "d1", body("d1")); code != 202 {
		t.Fatalf("delta after the reload: %d %s", code, ans)
	}
	// A broken file: the running set stays, and the log says why.
	if err := os.WriteFile(file, []byte("tenants:\n  acme:\n    secrets: []\n"+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitUntil(t, "the failed reload", func() bool { return strings.Contains(sv.stderr.String(), "tenants file not reloaded") })
	if !strings.Contains(sv.stderr.String(), "tenant acme: 0 secrets") {
		t.Errorf("the log does not say why:\n%s", sv.stderr)
	}
	for _, tc := range [][3]string{{"delta", "delta-secret-0123456789", "d2"}, {"acme", "acme-current-secret-01", "a3"}} {
		if code, ans := deliverSigned(t, base+"/t/"+tc[0]+"/hooks", tc[1], "issues", tc[2], body(tc[2])); code != 202 {
			t.Errorf("%s after a broken reload: %d %s", tc[0], code, ans)
		}
	}
	time.Sleep(10 * time.Millisecond)
}

// TestServeAccept: serve --accept issues with an inbox: a signed push is 200
// "ignored", not in 'inbox ls', and logged; an issues delivery is 202
// (TestTenantLabel counts an ignored delivery in the metrics).
func TestServeAccept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--accept", "issues")
	url := "http://" + sv.addr + webhooks.DefaultPath
	if code, ans := deliver(t, url, "push", "p1", []byte(`{"ref":"refs/heads/main"}`), nil); code != 200 || ans != "ignored\n" {
		t.Fatalf("push: %d %q", code, ans)
	}
	if code, ans := deliver(t, url, "issues", "i1", []byte(`{"action":"opened"}`), nil); code != 202 {
		t.Fatalf("issues: %d %q", code, ans)
	}
	code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--json", "--inbox", dir)
	if code != 0 {
		t.Fatalf("inbox ls: %s", errOut)
	}
	if strings.Contains(out, `"p1"`) || !strings.Contains(out, `"i1"`) {
		t.Errorf("inbox ls: %s", out)
	}
	if !strings.Contains(sv.stderr.String(), "delivery ignored") {
		t.Errorf("no log line for the ignored delivery:\n%s", sv.stderr)
	}
}

// TestServeAllowFromMeta: serve --allow-from meta against a fake API: from
// outside the ranges 403 with the body never read, from inside 202; a range
// wider than /8 in the answer (0.0.0.0/0) is refused and logged; the forge
// unreachable at a refresh keeps the ranges, and the log says so.
func TestServeAllowFromMeta(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hooks, up := `["192.0.2.0/24","0.0.0.0/0"]`, true
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/meta" || !up {
			http.Error(w, "unreachable", http.StatusBadGateway)
			return
		}
		w.Write([]byte(`{"hooks":` + hooks + `,"web":["0.0.0.0/0"]}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir,
		"--allow-from", "meta", "--api-url", api.URL, "--meta-refresh", "50ms")
	url := "http://" + sv.addr + webhooks.DefaultPath

	conn, err := net.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", webhooks.DefaultPath)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("outside the ranges, the body unsent: %v %v", resp, err)
	}
	waitUntil(t, "the refused range logged", func() bool {
		return strings.Contains(sv.stderr.String(), "/meta ranges refused: wider than /8 (IPv4) or /24 (IPv6)") && strings.Contains(sv.stderr.String(), "first=0.0.0.0/0")
	})

	mu.Lock()
	hooks = `["192.0.2.0/24","127.0.0.1/32"]`
	mu.Unlock()
	n := 0
	waitUntil(t, "the refreshed ranges", func() bool {
		n++
		code, _ := deliver(t, url, "issues", fmt.Sprint("in-", n), []byte(fmt.Sprintf(`{"action":"opened","n":%d}`, n)), nil)
		return code == http.StatusAccepted
	})
	mu.Lock()
	up = false
	mu.Unlock()
	waitUntil(t, "a failed refresh logged", func() bool {
		return strings.Contains(sv.stderr.String(), "could not refresh the allowed source ranges; the last ones stay")
	})
	if code, ans := deliver(t, url, "issues", "after", []byte(`{"action":"opened","n":"after"}`), nil); code != http.StatusAccepted {
		t.Errorf("with the forge unreachable: %d %s, want 202 (ranges kept)", code, ans)
	}
}

// TestServeWorkers: serve --workers 2 runs at most two stored deliveries'
// handlers at once.
func TestServeWorkers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var now, most, done int
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now++
		most = max(most, now)
		mu.Unlock()
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		now--
		done++
		mu.Unlock()
	}))
	defer target.Close()
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", t.TempDir(), "--forward", target.URL, "--workers", "2")
	for i := range 6 {
		id := fmt.Sprint("w", i)
		if code, ans := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "issues", id, []byte(`{"action":"opened","id":"`+id+`"}`), nil); code != 202 {
			t.Fatalf("%s: %d %s", id, code, ans)
		}
	}
	waitUntil(t, "six forwarded", func() bool { mu.Lock(); defer mu.Unlock(); return done == 6 })
	mu.Lock()
	defer mu.Unlock()
	if most != 2 {
		t.Errorf("at most %d ran at once, want 2", most)
	}
	if code, _, errOut := runCmd(t, "", nil, "serve", "--secret", testSecret, "--inbox", t.TempDir(), "--workers", "-1"); code != exitUsage || !strings.Contains(errOut, "--workers") {
		t.Errorf("--workers -1: %d %s", code, errOut)
	}
}
