package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/webhooks"
)

func TestServeCatchupUsage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FORGE_TOKEN": catchupToken}
	hook := []string{"--repo", "octo/site", "--hook-id", "7", "--token-env", "FORGE_TOKEN"}
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{"hook without interval", hook, "--hook-id, --repo, --token-env: catch-up flags, which need --catchup-every INTERVAL"},
		{"state without interval", []string{"--state", "x.json"}, "--state: catch-up flags"},
		{"interval without hook", []string{"--catchup-every", "1h"}, "say which hook"},
		{"negative interval", append([]string{"--catchup-every", "-1h"}, hook...), "want a positive interval"},
		{"state with inbox", append([]string{"--catchup-every", "1h", "--state", "x.json", "--inbox", "dir"}, hook...), "--state and --inbox/--nats exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "", env, append([]string{"serve", "--secret", testSecret, "--addr", "127.0.0.1:0"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.err) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.err)
			}
		})
	}
	code, _, stderr := runCmd(t, "", env, "catchup", "--inbox", "d", "--state", "x.json", "--repo", "o/r", "--hook-id", "1", "--token-env", "FORGE_TOKEN")
	if code != exitUsage || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("catchup --inbox --state: exit %d, %s", code, stderr)
	}
}

// TestServeCatchupInbox: serve --inbox --catchup-every, over real HTTP on
// 127.0.0.1 with the fake forge: the run at start has the deliveries missed
// while serve was down redelivered into the inbox and handled once each; a
// delivery the inbox holds but the forge logged failed (its answer lost) is
// not asked for; the checkpoint is in the inbox's state bucket; a restarted
// serve, and 'forgehooks catchup --inbox', request nothing; the page's
// Redeliver asks the forge for one delivery again, which the inbox answers
// as a duplicate.
func TestServeCatchupInbox(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(t, forgetest.Options{Token: catchupToken, Secret: testSecret})
	key := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(key)
	missed := []forgetest.Attempt{
		forge.Send(key, "issues", []byte(`{"action":"opened","issue":{"number":1}}`)),
		forge.Send(key, "push", []byte(`{"ref":"refs/heads/main"}`)),
	}
	dir := t.TempDir()
	env := map[string]string{"FORGE_TOKEN": catchupToken}
	hookArgs := []string{"--api-url", forge.URL, "--repo", "octo/site", "--hook-id", "7", "--token-env", "FORGE_TOKEN", "--per-minute", "6000"}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--catchup-every", "1h", "--ui", "127.0.0.1:0"}, hookArgs...)
	rec := newReceived()
	c := &cli{getenv: func(k string) string { return env[k] }, setup: rec.setup,
		// the forge sends to serve from its start on, before catch-up runs
		listening: func(addr string) { forge.SetReceiver("http://" + addr + webhooks.DefaultPath) }}

	// One delivery reached the inbox, but the forge logged it failed.
	forge.SetReceiver("")
	held := forge.Send(key, "star", []byte(`{"action":"created"}`))
	sv := start(t, &cli{getenv: c.getenv}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir)
	if code, ans := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "star", held.GUID, []byte(`{"action":"created"}`), nil); code != 202 {
		t.Fatalf("%d %s", code, ans)
	}
	// Handled before the stop: one fetched and not yet started is handed
	// back at Close and would run in the next serve.
	waitLog(t, sv, regexp.MustCompile(`msg="delivery handled" id=`+held.GUID))
	if code := sv.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sv.stderr)
	}

	sv = start(t, c, args...)
	for _, a := range missed {
		rec.waitFor(t, a.GUID)
	}
	done := regexp.MustCompile(`msg="catch-up done" hook="repository hook octo/site #7" deliveries=3 pages=1 requested=(\d+) succeeded=0 held=(\d+)`)
	waitLog(t, sv, done)
	if m := done.FindStringSubmatch(sv.stderr.String()); m[1] != "2" || m[2] != "1" {
		t.Errorf("catch-up: requested %s held %s, want 2 and 1:\n%s", m[1], m[2], sv.stderr)
	}

	// The page's Redeliver: the forge sends dl again; the inbox has it.
	page := uiURL(t, sv)
	var d pageDetail
	if code := getJSON(t, page+"api/delivery?key=d:"+missed[0].GUID, &d); code != 200 || !d.CanRedeliver {
		t.Errorf("detail: %d %+v", code, d)
	}
	csrf := csrfToken(t, page)
	if code, ans := pageAction(t, page, csrf, "redeliver", missed[0].GUID); code != 200 {
		t.Errorf("redeliver: %d %s", code, ans)
	}
	if code, ans := pageAction(t, page, csrf, "redeliver", "not-in-the-log"); code != 404 || !strings.Contains(ans, "delivery log") {
		t.Errorf("redeliver of a guid the forge does not have: %d %s", code, ans)
	}
	waitLog(t, sv, regexp.MustCompile(`msg="duplicate delivery" id=`+missed[0].GUID))
	if code := sv.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sv.stderr)
	}
	counts := map[string]int{}
	rec.mu.Lock()
	for _, e := range rec.events {
		counts[e.ID]++
	}
	rec.mu.Unlock()
	if counts[missed[0].GUID] != 1 || counts[missed[1].GUID] != 1 || counts[held.GUID] != 0 {
		t.Errorf("handled %v; want each missed guid once, the held one not again", counts)
	}
	posts := forgePosts(forge)

	// The checkpoint is in the inbox.
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.GetState(context.Background(), catchup.StoreKeyPrefix+"repos/octo/site/hooks/7")
	in.Close(context.Background())
	var st catchup.State
	if err != nil || json.Unmarshal(b, &st) != nil || st.Through.IsZero() || len(st.Requested) != 2 {
		t.Fatalf("checkpoint in the inbox: %s, %v", b, err)
	}
	for _, a := range missed {
		if _, ok := st.Requested[a.GUID]; !ok {
			t.Errorf("%s not kept as requested: %s", a.GUID, b)
		}
	}

	// A second run, in serve and on its own, requests nothing.
	sv = start(t, &cli{getenv: c.getenv, setup: rec.setup}, args...)
	waitLog(t, sv, regexp.MustCompile(`msg="catch-up done" .* requested=0 `))
	if code := sv.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sv.stderr)
	}
	code, stdout, stderr := runCmd(t, "", env, append([]string{"catchup", "--inbox", dir}, hookArgs...)...)
	if code != 0 || !strings.Contains(stdout, "requested 0 redeliveries") {
		t.Errorf("catchup --inbox: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := forgePosts(forge); n != posts {
		t.Errorf("%d redelivery requests after the first serve, want none", n-posts)
	}
	if posts != 3 { // 2 by catch-up, 1 by the page
		t.Errorf("%d redelivery requests, want 3", posts)
	}
}

func forgePosts(f *forgetest.Server) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == "POST" {
			n++
		}
	}
	return n
}

// waitLog waits until serve's log matches re.
func waitLog(t *testing.T, p *proc, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !re.MatchString(p.stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never matched %s:\n%s", re, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without an inbox, serve --catchup-every keeps its checkpoint in --state:
// the missed delivery is redelivered and handled once, and the file names it.
func TestServeCatchupStateFile(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(t, forgetest.Options{Token: catchupToken, Secret: testSecret})
	key := forgetest.OrgHook("octo", 9)
	forge.AddHook(key)
	missed := forge.Send(key, "issues", []byte(`{"action":"opened"}`))
	state := t.TempDir() + "/catchup.json"
	rec := newReceived()
	c := &cli{getenv: func(k string) string { return map[string]string{"T": catchupToken}[k] }, setup: rec.setup,
		listening: func(addr string) { forge.SetReceiver("http://" + addr + webhooks.DefaultPath) }}
	sv := start(t, c, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--catchup-every", "1h",
		"--api-url", forge.URL, "--org", "octo", "--hook-id", "9", "--token-env", "T", "--state", state)
	rec.waitFor(t, missed.GUID)
	waitLog(t, sv, regexp.MustCompile(`msg="catch-up done" hook="organization hook octo #9" deliveries=1 pages=1 requested=1 `))
	if code := sv.stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, sv.stderr)
	}
	st, err := (&catchup.StateFile{Path: state}).Load(context.Background(), catchup.OrgHook("octo", 9).Key())
	if _, ok := st.Requested[missed.GUID]; err != nil || !ok || st.Through.IsZero() {
		t.Errorf("state file: %+v, %v", st, err)
	}
}
