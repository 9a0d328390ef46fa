package webhookstest_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// TestPayloads checks every example of every name: it is a JSON object of
// its event and action, Payloads and Payload agree, and a real middleware
// dispatches it under its name.
func TestPayloads(t *testing.T) {
	names := webhookstest.Names()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Error("Names is not sorted, or has a name twice")
	}
	r := newReceiver(t, webhooks.MiddlewareOptions{})
	total := 0
	for _, name := range names {
		event, action, _ := strings.Cut(name, ".")
		all := webhookstest.Payloads(name)
		if len(all) == 0 {
			t.Errorf("%s: in Names but no payload", name)
			continue
		}
		if first := webhookstest.Payload(name); string(first) != string(all[0]) {
			t.Errorf("%s: Payload is not the first of Payloads", name)
		}
		for i, p := range all {
			var head struct {
				Action *string `json:"action"`
			}
			if err := json.Unmarshal(p, &head); err != nil {
				t.Errorf("%s #%d: %v", name, i, err)
				continue
			}
			if action != "" && (head.Action == nil || *head.Action != action) {
				t.Errorf("%s #%d: action %v", name, i, head.Action)
			}
			if action != "" {
				continue // delivered once, under its event's name
			}
			total++
			rec := webhookstest.Deliver(t, r.mw, webhookstest.NewRequest(t, secret, event, p))
			want := 200
			if head.Action != nil && *head.Action == "deleted" {
				want = 500 // the receiver's handler fails deletions
			}
			if rec.Code != want {
				t.Errorf("%s #%d: answered %d %s, want %d", name, i, rec.Code, rec.Body, want)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) != total {
		t.Fatalf("%d deliveries handled, %d sent", len(r.events), total)
	}
	for i, e := range r.events {
		if e.Action() != "" && !slices.Contains(names, e.Name+"."+e.Action()) {
			t.Errorf("delivery %d, %s.%s, is not in Names", i, e.Name, e.Action())
		}
	}
	t.Logf("%d names, %d payloads", len(names), total)
}

// TestPayloadsCoverNames: every name of the names tuple has an example.
func TestPayloadsCoverNames(t *testing.T) {
	have := map[string]bool{}
	for _, n := range webhookstest.Names() {
		have[n] = true
	}
	for _, n := range payloads.EmitterEventNames() {
		if !have[n] {
			t.Errorf("no example payload of %s", n)
		}
	}
}

// TestPayloadsCoverContract: every name of the behaviour contract's events table
// has an example.
func TestPayloadsCoverContract(t *testing.T) {
	f, err := os.Open("../schema/names-original.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	have := map[string]bool{}
	for _, n := range webhookstest.Names() {
		have[n] = true
	}
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		name := strings.TrimSpace(sc.Text())
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		n++
		if !have[name] {
			t.Errorf("no example payload of %s", name)
		}
	}
	if n != 264 {
		t.Errorf("read %d names, want the 264 of the behaviour contract", n)
	}
}

// TestPayloadIsACopy: a test that changes its payload changes no other test's.
func TestPayloadIsACopy(t *testing.T) {
	a := webhookstest.Payload("push")
	orig := string(a)
	clear(a)
	if b := webhookstest.Payload("push"); string(b) != orig {
		t.Error("changing a payload changed the next one returned")
	}
	all := webhookstest.Payloads("push")
	clear(all[0])
	if webhookstest.Payloads("push")[0][0] != '{' {
		t.Error("changing a payload of Payloads changed the next one returned")
	}
}

// TestPayloadMissing: an unknown name panics with a message that helps.
func TestPayloadMissing(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"issues.flying", `no example payload of "issues.flying"; issues has examples of issues.assigned, `},
		{"no_such_event", `no example payload of "no_such_event"; webhookstest.Names lists the `},
		{"", `no example payload of ""`},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tc.want) {
					t.Errorf("Payload(%q) panicked with %q, want %q", tc.name, msg, tc.want)
				}
			}()
			webhookstest.Payload(tc.name)
		}()
		if got := webhookstest.Payloads(tc.name); got != nil {
			t.Errorf("Payloads(%q) = %d payloads, want nil", tc.name, len(got))
		}
	}
}

// TestTypicalPayloads: the default push is a push to a branch with commits,
// the default pull_request.opened names an app installation, and Label says
// so.
func TestTypicalPayloads(t *testing.T) {
	for _, tc := range []struct{ name, event, label string }{
		{"push", "push", "push to refs/heads/"},
		{"pull_request.opened", "pull_request", "pull_request.opened, app installation"},
		{"issues.opened", "issues", "issues.opened"},
	} {
		p := webhookstest.Payload(tc.name)
		if l := webhookstest.Label(tc.event, p); !strings.HasPrefix(l, tc.label) {
			t.Errorf("Label of Payload(%q) = %q, want it to start with %q", tc.name, l, tc.label)
		}
	}
	var push struct {
		Ref          string
		Commits      []struct{ ID string }
		Installation *struct{ ID int64 }
	}
	if err := json.Unmarshal(webhookstest.Payload("push"), &push); err != nil || !strings.HasPrefix(push.Ref, "refs/heads/") || len(push.Commits) == 0 || push.Installation == nil {
		t.Errorf("Payload(push): %+v %v", push, err)
	}
	if l := webhookstest.Label("push", webhookstest.Payloads("push")[len(webhookstest.Payloads("push"))-1]); !strings.Contains(l, "refs/tags/") {
		t.Errorf("the last push example is %q, want a tag push", l)
	}
}
