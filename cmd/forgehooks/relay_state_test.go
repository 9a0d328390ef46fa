package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRelayStateResumes: relay --state FILE keeps the last event id; a relay
// restarted with the same FILE gets what was sent while it was away, and not
// what it had already handled.
func TestRelayStateResumes(t *testing.T) {
	t.Parallel()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)
	state := filepath.Join(t.TempDir(), "relay.state")
	relayCmd := func(rec *received) *proc {
		connected := make(chan struct{}, 8)
		p := start(t, &cli{setup: rec.setup, connected: func() { connected <- struct{}{} }},
			"relay", "--source", channel, "--secret", testSecret, "--state", state)
		<-connected
		return p
	}
	send := func(id string) {
		t.Helper()
		if code, out, errOut := runCmd(t, "", nil, "send", "--url", channel, "--secret", testSecret, "--event", "ping", "--delivery", id); code != exitOK {
			t.Fatalf("send %s: exit %d %s%s", id, code, out, errOut)
		}
	}

	rec1 := newReceived()
	rl := relayCmd(rec1)
	send("s1")
	rec1.waitFor(t, "s1")
	// The id is kept once the delivery was dealt with, just after the handler
	// ran: wait for the file to hold the id the relay logged for s1.
	var saved []byte
	for deadline := time.Now().Add(testTimeout); ; time.Sleep(5 * time.Millisecond) {
		m := regexp.MustCompile(`id=s1 event=ping event_id=(\S+)`).FindStringSubmatch(rl.stderr.String())
		saved, _ = os.ReadFile(state)
		if m != nil && string(saved) == m[1]+"\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state file holds %q, not s1's event id; relay log:\n%s", saved, rl.stderr)
		}
	}
	if code := rl.stop(); code != exitOK {
		t.Fatalf("relay exited %d", code)
	}

	send("s2") // the relay is away
	send("s3")
	rec2 := newReceived()
	rl = relayCmd(rec2)
	got := rec2.waitFor(t, "s3")
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "s2,s3" {
		t.Errorf("after the restart the relay handled %q, want s2 and s3 only", ids)
	}
	if !strings.Contains(rl.stderr.String(), "resuming after the event id kept in the state file") {
		t.Errorf("relay did not say it resumed:\n%s", rl.stderr)
	}
	rl.stop()
	if again, _ := os.ReadFile(state); string(again) == string(saved) {
		t.Errorf("state file not updated after s2 and s3: %q", again)
	}
}

// TestRelayReadToken: a channel made with /new?token=1 is relayed only with its
// read token, given in --source's query, --read-token or the environment; the
// token never shows in the relay's log.
func TestRelayReadToken(t *testing.T) {
	t.Parallel()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	resp, err := http.Get("http://" + px.addr + "/new?token=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	channel, token := resp.Header.Get("Location"), resp.Header.Get("X-Read-Token")
	if resp.StatusCode != http.StatusCreated || channel == "" || token == "" {
		t.Fatalf("/new?token=1: %s, Location %q, token %q", resp.Status, channel, token)
	}

	code, _, errOut := runCmd(t, "", nil, "relay", "--source", channel, "--secret", testSecret)
	if code != exitFailure || !strings.Contains(errOut, "needs its read token") {
		t.Errorf("without the token: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCmd(t, "", nil, "relay", "--source", channel+"?token=wrong"+token[:4], "--secret", testSecret)
	if code != exitFailure || !strings.Contains(errOut, "token=REDACTED") || strings.Contains(errOut, "wrong") {
		t.Errorf("with a wrong token: exit %d, %q; want 1 and the token redacted", code, errOut)
	}

	for i, how := range []struct {
		args []string
		env  string
	}{
		{args: []string{"--source", channel + "?token=" + token}},
		{args: []string{"--source", channel, "--read-token", token}},
		{args: []string{"--source", channel}, env: token},
	} {
		rec := newReceived()
		connected := make(chan struct{}, 8)
		c := &cli{setup: rec.setup, connected: func() { connected <- struct{}{} },
			getenv: func(k string) string {
				if k == readTokenEnv {
					return how.env
				}
				return ""
			}}
		rl := start(t, c, append([]string{"relay", "--secret", testSecret}, how.args...)...)
		<-connected
		id := fmt.Sprintf("tok-%d", i)
		if code, out, errOut := runCmd(t, "", nil, "send", "--url", channel, "--secret", testSecret, "--event", "ping", "--delivery", id); code != exitOK {
			t.Fatalf("send: exit %d %s%s", code, out, errOut)
		}
		rec.waitFor(t, id)
		rl.stop()
		if strings.Contains(rl.stderr.String(), token) {
			t.Errorf("case %d: the token shows in the relay's log:\n%s", i, rl.stderr)
		}
	}
}
