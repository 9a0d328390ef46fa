package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
)

// sendAll sends every public example to url with `forgehooks send`, each with
// the delivery id "<prefix>-<index>", then a last "<prefix>-end" delivery; it
// returns the examples.
func sendAll(t *testing.T, url, prefix string) []corpus.Example {
	t.Helper()
	examples := corpus.Public()
	if len(examples) < 300 {
		t.Fatalf("only %d public examples", len(examples))
	}
	for i, ex := range examples {
		code, out, errOut := runCmd(t, string(ex.Body), nil,
			"send", "--url", url, "--secret", testSecret, "--event", ex.Event, "--delivery", fmt.Sprintf("%s-%d", prefix, i), "-")
		if code != exitOK {
			t.Fatalf("send %s: exit %d\n%s%s", ex.Path, code, out, errOut)
		}
	}
	code, out, errOut := runCmd(t, "", nil, "send", "--url", url, "--secret", testSecret, "--event", "ping", "--delivery", prefix+"-end")
	if code != exitOK {
		t.Fatalf("send ping: exit %d\n%s%s", code, out, errOut)
	}
	return examples
}

// checkAll checks that each example was handled exactly once, under its event
// name, with its body byte for byte. The relay handles deliveries in order, so
// once the end marker arrived, a duplicate of any earlier one would have too.
func checkAll(t *testing.T, examples []corpus.Example, got []emitter.Event, prefix string) {
	t.Helper()
	byID := map[string][]emitter.Event{}
	for _, e := range got {
		byID[e.ID] = append(byID[e.ID], e)
	}
	for i, ex := range examples {
		es := byID[fmt.Sprintf("%s-%d", prefix, i)]
		if len(es) != 1 {
			t.Errorf("%s: handled %d times, want once", ex.Path, len(es))
			continue
		}
		if es[0].Name != ex.Event || !bytes.Equal(es[0].Payload, ex.Body) {
			t.Errorf("%s: handled as %q with a body of %d bytes (equal: %v), want %q with %d bytes",
				ex.Path, es[0].Name, len(es[0].Payload), bytes.Equal(es[0].Payload, ex.Body), ex.Event, len(ex.Body))
		}
	}
	if len(got) != len(examples)+1 {
		t.Errorf("%d deliveries handled, want %d", len(got), len(examples)+1)
	}
}

// TestEndToEndRelayInProcess: send → proxy → relay (verifying with the secret)
// → handlers in the relay's process, for every public example payload.
func TestEndToEndRelayInProcess(t *testing.T) {
	t.Parallel()
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)
	rec := newReceived()
	connected := make(chan struct{}, 1)
	rl := start(t, &cli{setup: rec.setup, connected: func() { connected <- struct{}{} }},
		"relay", "--source", channel, "--secret", testSecret)
	<-connected

	examples := sendAll(t, channel, "in")
	got := rec.waitFor(t, "in-end")
	checkAll(t, examples, got, "in")

	if code := rl.stop(); code != exitOK {
		t.Errorf("relay exited %d", code)
	}
	log := rl.stderr.String()
	if n := strings.Count(log, "delivery verified and dispatched"); n != len(examples)+1 {
		t.Errorf("relay logged %d verified deliveries, want %d", n, len(examples)+1)
	}
	if !strings.Contains(log, "repository=Codertocat/Hello-World sender=Codertocat") {
		t.Errorf("relay's lines do not name repository and sender:\n%.2000s", log)
	}
	if strings.Contains(log, "rejected") {
		t.Errorf("relay rejected deliveries:\n%s", log)
	}
}

// TestEndToEndRelayToServe: send → proxy → relay --target → serve, for every
// public example payload.
func TestEndToEndRelayToServe(t *testing.T) {
	t.Parallel()
	rec := newReceived()
	sv := start(t, &cli{setup: rec.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret)
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)
	connected := make(chan struct{}, 1)
	rl := start(t, &cli{connected: func() { connected <- struct{}{} }},
		"relay", "--source", channel, "--target", "http://"+sv.addr+"/api/forge/webhooks")
	<-connected

	examples := sendAll(t, channel, "fw")
	got := rec.waitFor(t, "fw-end")
	checkAll(t, examples, got, "fw")

	// serve's handler runs before its answer reaches the relay, which logs the
	// last "forwarded" after that: stopping the relay at once would cut it off.
	forwarded := func() int { return strings.Count(rl.stderr.String(), `msg=forwarded `) }
	for deadline := time.Now().Add(testTimeout); forwarded() < len(examples)+1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rl.stop()
	if code := sv.stop(); code != exitOK {
		t.Errorf("serve exited %d", code)
	}
	log := sv.stderr.String()
	if n := strings.Count(log, `msg="delivery ok"`); n != len(examples)+1 {
		t.Errorf("serve logged %d deliveries ok, want %d", n, len(examples)+1)
	}
	if !strings.Contains(log, "event=issues.opened repository=Codertocat/Hello-World sender=Codertocat status=200") {
		t.Errorf("serve's lines do not name event.action, repository and sender:\n%.2000s", log)
	}
	if n := forwarded(); n != len(examples)+1 {
		t.Errorf("relay forwarded %d, want %d", n, len(examples)+1)
	}
}
