package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeTenantsFIFO: a FIFO as the tenants file, or as a file: secret,
// fails serve's start within a second with an error that says what it is,
// where the open used to block for ever.
func TestServeTenantsFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	secretFIFO := filepath.Join(dir, "secret-fifo.yaml")
	if err := os.WriteFile(secretFIFO, []byte("tenants:\n  acme:\n    secrets: [file:fifo]\n"+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{fifo, secretFIFO} {
		begin := time.Now()
		code, _, errOut := runCmd(t, "", nil, "serve", "--addr", "127.0.0.1:0", "--tenants", file, "--path", "/t/{tenant}/hooks")
		if took := time.Since(begin); took > time.Second {
			t.Errorf("%s: start failed after %v, want within 1 s", file, took)
		}
		if code != exitUsage || !strings.Contains(errOut, "--tenants: ") || !strings.Contains(errOut, "not a regular file (a named pipe)") {
			t.Errorf("%s: exit %d, %s", file, code, errOut)
		}
	}
}

// TestServeTenantsReloadRefused: on SIGHUP, a FIFO put in the tenants
// file's place, a file: secret that is a FIFO, and a file caught
// half-written (no end marker) are each refused and logged with the reason,
// the running tenants answering meanwhile; the next good file applies.
func TestServeTenantsReloadRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tenants.yaml")
	acmeOnly := "tenants:\n  acme:\n    secrets: [\"acme-current-secret-01\"]\n"
	if err := os.WriteFile(file, []byte(acmeOnly+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--tenants", file, "--path", "/t/{tenant}/hooks")
	base := "http://" + sv.addr
	n := 0
	post := func(tenant, secret string) int {
		n++
		id := tenant + "-" + strings.Repeat("x", n)
		code, _ := deliverSigned(t, base+"/t/"+tenant+"/hooks", secret, "issues", id, []byte(`{"action":"opened","id":"`+id+`"}`))
		return code
	}
	refused := func(why string) {
		t.Helper()
		before := strings.Count(sv.stderr.String(), "tenants file not reloaded")
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		waitUntil(t, "the refused reload ("+why+")", func() bool {
			return strings.Count(sv.stderr.String(), "tenants file not reloaded") > before
		})
		log := sv.stderr.String()
		if last := log[strings.LastIndex(log, "tenants file not reloaded"):]; !strings.Contains(last, why) {
			t.Errorf("the refused reload's line does not say %q: %s", why, last)
		}
		if code := post("acme", "acme-current-secret-01"); code != 200 {
			t.Errorf("acme after a refused reload (%s): %d, want 200", why, code)
		}
		if code := post("beta", "beta-secret-0123456789"); code != 404 {
			t.Errorf("beta after a refused reload (%s): %d, want 404", why, code)
		}
	}
	if code := post("acme", "acme-current-secret-01"); code != 200 {
		t.Fatalf("acme: %d", code)
	}

	// A FIFO in the file's place.
	if err := os.Rename(file, file+".good"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, file); err != nil {
		t.Fatal(err)
	}
	refused("not a regular file")
	os.Remove(file)

	// A file: secret that is a FIFO.
	withBeta := acmeOnly + "  beta:\n    secrets: [\"beta-secret-0123456789\"]\n"
	if err := os.WriteFile(file, []byte(withBeta+"  gamma:\n    secrets: [file:fifo]\n"+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	refused("not a regular file")

	// Half written: beta is there, the rest and the end marker not yet.
	if err := os.WriteFile(file, []byte(withBeta), 0o600); err != nil {
		t.Fatal(err)
	}
	refused(`end: true`)

	// The next good file applies.
	if err := os.WriteFile(file, []byte(withBeta+tenantsEnd), 0o600); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(sv.stderr.String(), "tenants file reloaded")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitUntil(t, "the good reload", func() bool { return strings.Count(sv.stderr.String(), "tenants file reloaded") > before })
	if code := post("beta", "beta-secret-0123456789"); code != 200 {
		t.Errorf("beta after the good reload: %d, want 200", code)
	}
}
