package main

import (
	"regexp"
	"testing"
)

// TestProxyRestartCommands runs the proxy and relay commands through a proxy
// restart with --journal: a relay that was away, with deliveries sent both before
// and after the restart, gets them all when it comes back with its last event
// id; a relay that stays connected through a restart goes on receiving.
// (internal/relay's TestProxyRestartReplay holds a relay away at will, and covers
// the proxy without journal too.)
//
// Not parallel: the proxy is restarted on the port it had, and a parallel
// test taking an ephemeral port could take that one while it is down (a send
// then met another test's server: "broken pipe").
func TestProxyRestartCommands(t *testing.T) {
	journal := t.TempDir()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0", "--journal", journal)
	addr := px.addr
	channel := newChannel(t, addr)
	send := func(id string) {
		t.Helper()
		if code, out, errOut := runCmd(t, "", nil, "send", "--url", channel, "--secret", testSecret, "--event", "ping", "--delivery", id); code != exitOK {
			t.Fatalf("send %s: exit %d %s%s", id, code, out, errOut)
		}
	}
	relayCmd := func(rec *received, lastID string) *proc {
		connected := make(chan struct{}, 8)
		args := []string{"relay", "--source", channel, "--secret", testSecret}
		if lastID != "" {
			args = append(args, "--last-event-id", lastID)
		}
		p := start(t, &cli{setup: rec.setup, connected: func() { connected <- struct{}{} }}, args...)
		<-connected
		return p
	}

	rec1 := newReceived()
	rl := relayCmd(rec1, "")
	send("d1")
	rec1.waitFor(t, "d1")
	rl.stop()
	m := regexp.MustCompile(`id=d1 event=ping event_id=(\S+)`).FindStringSubmatch(rl.stderr.String())
	if m == nil {
		t.Fatalf("relay did not log d1's event id:\n%s", rl.stderr)
	}

	send("d2") // the relay is away
	px.stop()
	px = start(t, nil, "proxy", "--addr", addr, "--journal", journal)
	send("d3") // the relay is still away

	rec2 := newReceived()
	rl = relayCmd(rec2, m[1])
	got := rec2.waitFor(t, "d3")
	if len(got) != 2 || got[0].ID != "d2" || got[1].ID != "d3" {
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		t.Fatalf("after coming back: %q, want d2 and d3", ids)
	}

	// Restart with the relay connected: it reconnects by itself.
	px.stop()
	px = start(t, nil, "proxy", "--addr", addr, "--journal", journal)
	send("d4")
	got = rec2.waitFor(t, "d4")
	if len(got) != 3 {
		t.Errorf("handled %d deliveries, want 3 (d2, d3, d4, each once)", len(got))
	}
	rl.stop()
	px.stop()
}
