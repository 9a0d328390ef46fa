package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/forgetest"
)

const catchupToken = "cli-test-token-42"

func TestCatchupUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	os.WriteFile(keyFile, []byte("not a key"), 0o600)
	env := map[string]string{"FORGE_TOKEN": catchupToken}
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no hook", []string{"catchup", "--token-env", "FORGE_TOKEN"}, 2, "say which hook"},
		{"two hooks", []string{"catchup", "--app", "--org", "o", "--hook-id", "1"}, 2, "say which hook"},
		{"app without key", []string{"catchup", "--app", "--app-id", "1"}, 2, "--app needs --app-id N and --private-key FILE"},
		{"app with token", []string{"catchup", "--app", "--token-env", "FORGE_TOKEN"}, 2, "not --token-env"},
		{"app with hook id", []string{"catchup", "--app", "--hook-id", "3"}, 2, "the app has one hook"},
		{"missing key file", []string{"catchup", "--app", "--app-id", "1", "--private-key", filepath.Join(dir, "none.pem")}, 1, "no such file"},
		{"bad key file", []string{"catchup", "--app", "--app-id", "1", "--private-key", keyFile}, 1, "private key: no PEM block found"},
		{"key file a directory", []string{"catchup", "--app", "--app-id", "1", "--private-key", dir}, 1, "not a regular file"},
		{"repo without hook id", []string{"catchup", "--repo", "o/r", "--token-env", "FORGE_TOKEN"}, 2, "need --hook-id N"},
		{"repo without token", []string{"catchup", "--repo", "o/r", "--hook-id", "1"}, 2, "need --token-env VAR"},
		{"repo with app key", []string{"catchup", "--repo", "o/r", "--hook-id", "1", "--app-id", "1"}, 2, "not --app-id/--private-key"},
		{"empty token", []string{"catchup", "--org", "o", "--hook-id", "1", "--token-env", "NOPE"}, 2, "NOPE (--token-env) is empty or not set"},
		{"bad repo", []string{"catchup", "--repo", "o", "--hook-id", "1", "--token-env", "FORGE_TOKEN"}, 2, "want OWNER/REPO"},
		{"negative since", []string{"catchup", "--org", "o", "--hook-id", "1", "--token-env", "FORGE_TOKEN", "--since", "-1h"}, 2, "want a positive duration"},
		{"stray argument", []string{"catchup", "x"}, 2, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "", env, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.err)
			}
			if strings.Contains(stderr, catchupToken) {
				t.Error("the token was printed")
			}
		})
	}
	code, stdout, _ := runCmd(t, "", nil, "catchup", "--help")
	if code != 0 || !strings.Contains(stdout, "--token-env") || !strings.Contains(stdout, "https://api.github.com") {
		t.Errorf("help: exit %d\n%s", code, stdout)
	}
}

// A dry run prints the table; a run requests the missed guids, which the fake
// forge redelivers to the receiver; a second run requests nothing.
func TestCatchupCommand(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("X-Forge-Delivery")]++
		mu.Unlock()
	}))
	defer recv.Close()
	forge := forgetest.New(t, forgetest.Options{Token: catchupToken, Secret: testSecret})
	hook := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(hook)
	missed := []forgetest.Attempt{
		forge.Send(hook, "issues", []byte(`{"action":"opened"}`)), // nobody listens
		forge.Send(hook, "push", []byte(`{"ref":"refs/heads/main"}`)),
	}
	forge.SetReceiver(recv.URL)
	ok := forge.Send(hook, "star", []byte(`{"action":"created"}`))
	env := map[string]string{"FORGE_TOKEN": catchupToken}
	state := filepath.Join(t.TempDir(), "catchup.json")
	args := []string{"catchup", "--api-url", forge.URL, "--repo", "octo/site", "--hook-id", "7", "--token-env", "FORGE_TOKEN", "--state", state, "--per-minute", "6000"}

	code, stdout, stderr := runCmd(t, "", env, append(args, "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`GUID +EVENT +ACTION +LAST STATUS +DECISION`),
		regexp.MustCompile(missed[0].GUID + ` +issues +opened +0 failed to connect to host +would redeliver`),
		regexp.MustCompile(missed[1].GUID + ` +push +- +0 failed to connect to host +would redeliver`),
		regexp.MustCompile(ok.GUID + ` +star +created +200 OK +skip: succeeded`),
		regexp.MustCompile(`repository hook octo/site #7: 3 deliveries in 3 attempts read \(1 pages\) since .*; would request 2 redeliveries; skipped 1 succeeded`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("dry-run output lacks %s:\n%s", want, stdout)
		}
	}
	if len(got) != 1 {
		t.Fatalf("the dry run redelivered: %v", got)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Error("the dry run wrote the state file")
	}

	code, stdout, stderr = runCmd(t, "", env, args...)
	if code != 0 || !strings.Contains(stdout, "requested 2 redeliveries") || strings.Count(stdout, "redelivery requested") != 2 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, a := range missed {
		if got[a.GUID] != 1 {
			t.Errorf("%s received %d times, want 1", a.GUID, got[a.GUID])
		}
	}
	code, stdout, _ = runCmd(t, "", env, args...)
	if code != 0 || !strings.Contains(stdout, "requested 0 redeliveries; skipped 3 succeeded") {
		t.Errorf("second run: exit %d\n%s", code, stdout)
	}
	if strings.Contains(stdout+stderr, catchupToken) {
		t.Error("the token was printed")
	}
}

// The app hook, with a PKCS#8 key file; a 401 is a failure with a clear
// message, the forge's.
func TestCatchupCommandApp(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	forge := forgetest.New(t, forgetest.Options{AppID: "77", PublicKey: &key.PublicKey})
	forge.Send(forgetest.AppHook, "installation", []byte(`{"action":"created"}`))

	code, stdout, stderr := runCmd(t, "", nil, "catchup", "--api-url", forge.URL, "--app", "--app-id", "77", "--private-key", keyFile, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "app hook: 1 deliveries") || !strings.Contains(stdout, "would redeliver") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCmd(t, "", nil, "catchup", "--api-url", forge.URL, "--app", "--app-id", "78", "--private-key", keyFile, "--dry-run")
	if code != 1 || !strings.Contains(stderr, "401 Unauthorized: JWT iss 78 is not app 77") {
		t.Errorf("wrong app id: exit %d\n%s", code, stderr)
	}
}
