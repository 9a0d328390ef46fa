package payloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
)

// These tests use only names that every schema of the forge has (issues with
// opened and closed, push), so that they run on the generator's fixture too.

func receive(t *testing.T, em *emitter.Emitter, name, body string) error {
	t.Helper()
	return em.Receive(context.Background(), emitter.Event{ID: "d-1", Name: name, Payload: []byte(body)})
}

func TestTypedActionHandler(t *testing.T) {
	em := emitter.New(emitter.Options{})
	var got []string
	var mu sync.Mutex
	payloads.OnIssuesOpenedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e.ID+" "+e.Name+" "+e.Payload.GetAction())
		return nil
	})
	payloads.OnPushEvent(em, func(ctx context.Context, e payloads.Event[*payloads.PushEvent]) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e.ID+" "+e.Name+" "+e.Payload.Ref)
		return nil
	})
	for _, d := range []struct{ name, body string }{
		{"issues", `{"action":"opened"}`},
		{"issues", `{"action":"closed"}`}, // no handler for it
		{"push", `{"ref":"refs/heads/main"}`},
	} {
		if err := receive(t, em, d.name, d.body); err != nil {
			t.Fatalf("Receive(%s): %v", d.body, err)
		}
	}
	want := []string{"d-1 issues opened", "d-1 push refs/heads/main"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("handlers saw %q, want %q", got, want)
	}
}

func TestTypedEventHandlerTypeSwitch(t *testing.T) {
	em := emitter.New(emitter.Options{})
	var mu sync.Mutex
	seen := map[string]string{}
	payloads.OnIssuesEvent(em, func(ctx context.Context, e payloads.Event[payloads.IssuesEvent]) error {
		var kind string
		switch p := e.Payload.(type) {
		case *payloads.IssuesOpenedEvent:
			kind = "opened struct"
		case *payloads.IssuesClosedEvent:
			kind = "closed struct"
		case *payloads.IssuesUnknownEvent:
			kind = "unknown " + p.Action + " " + string(p.Raw)
		default:
			kind = "unexpected type"
		}
		mu.Lock()
		defer mu.Unlock()
		seen[e.Payload.GetAction()] = kind
		return nil
	})
	for _, body := range []string{`{"action":"opened"}`, `{"action":"closed"}`, `{"action":"teleported","x":1}`} {
		if err := receive(t, em, "issues", body); err != nil {
			t.Fatalf("Receive(%s): %v", body, err)
		}
	}
	want := map[string]string{
		"opened":     "opened struct",
		"closed":     "closed struct",
		"teleported": `unknown teleported {"action":"teleported","x":1}`,
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("action %q: handler saw %q, want %q", k, seen[k], v)
		}
	}
}

func TestUnknownActionKeepsPayload(t *testing.T) {
	body := `{"action":"teleported","sender":{"login":"octocat"},"extra":[1,2]}`
	p, err := payloads.Parse("issues", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := p.(*payloads.IssuesUnknownEvent)
	if !ok {
		t.Fatalf("Parse gave %T, want *IssuesUnknownEvent", p)
	}
	if u.Action != "teleported" || string(u.Raw) != body || payloads.PayloadName(p) != "issues.teleported" {
		t.Errorf("got action %q, raw %s, name %q", u.Action, u.Raw, payloads.PayloadName(p))
	}
	if s := u.GetSender(); s == nil {
		t.Error("GetSender() = nil")
	} else if out, _ := json.Marshal(s); string(out) != `{"login":"octocat"}` {
		t.Errorf("GetSender() = %s, want octocat", out)
	}
	out, err := u.MarshalJSON()
	if err != nil || !sameJSON(t, out, []byte(body)) {
		t.Errorf("MarshalJSON = %s, %v; want the payload back", out, err)
	}
}

func TestDecodeOncePerDelivery(t *testing.T) {
	em := emitter.New(emitter.Options{})
	var seen sync.Map // payload pointer → handlers that saw it
	var calls atomic.Int32
	record := func(p any) {
		calls.Add(1)
		n, _ := seen.LoadOrStore(p, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	}
	for range 3 {
		payloads.OnIssuesOpenedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
			record(e.Payload)
			return nil
		})
		payloads.OnIssuesEvent(em, func(ctx context.Context, e payloads.Event[payloads.IssuesEvent]) error {
			record(e.Payload)
			return nil
		})
	}
	if err := receive(t, em, "issues", `{"action":"opened"}`); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, em, "issues", `{"action":"opened"}`); err != nil {
		t.Fatal(err)
	}
	// Two deliveries, six typed handlers each: two decoded values, each seen six times.
	distinct := 0
	seen.Range(func(k, v any) bool {
		distinct++
		if n := v.(*atomic.Int32).Load(); n != 6 {
			t.Errorf("a decoded payload was seen by %d handlers, want 6", n)
		}
		return true
	})
	if distinct != 2 || calls.Load() != 12 {
		t.Errorf("%d distinct payloads over %d calls, want 2 over 12", distinct, calls.Load())
	}
}

func TestDecodeErrorIsHandlerError(t *testing.T) {
	em := emitter.New(emitter.Options{})
	ran := false
	payloads.OnIssuesOpenedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
		ran = true
		return nil
	})
	payloads.OnIssuesEvent(em, func(ctx context.Context, e payloads.Event[payloads.IssuesEvent]) error {
		ran = true
		return nil
	})
	rawRan := false
	em.On("issues", func(ctx context.Context, e emitter.Event) error { rawRan = true; return nil })
	body := `{"action":"opened","issue":{"id":"not a number"}}`
	err := receive(t, em, "issues", body)
	var ee *emitter.Error
	if !errors.As(err, &ee) {
		t.Fatalf("Receive = %v, want an *emitter.Error", err)
	}
	if ee.Event.Name != "issues" || string(ee.Event.Payload) != body || len(ee.Errors) != 2 {
		t.Errorf("error event %q %s with %d errors, want issues, the body, 2", ee.Event.Name, ee.Event.Payload, len(ee.Errors))
	}
	var de *payloads.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, payloads.ErrType) || de.Path != ".issue.id" {
		t.Errorf("error %v: want a *payloads.DecodeError at .issue.id wrapping ErrType", err)
	}
	if ran {
		t.Error("a typed handler ran on a payload that did not decode")
	}
	if !rawRan {
		t.Error("the raw handler did not run")
	}
}

func TestRegistrationReturnsListenerAndRejectsNil(t *testing.T) {
	em := emitter.New(emitter.Options{})
	n := 0
	l := payloads.OnPushEvent(em, func(ctx context.Context, e payloads.Event[*payloads.PushEvent]) error { n++; return nil })
	if !em.RemoveListener("push", l) {
		t.Fatal("RemoveListener did not find the typed listener")
	}
	if err := receive(t, em, "push", `{}`); err != nil || n != 0 {
		t.Errorf("after removal: %v, %d calls", err, n)
	}
	defer func() {
		if recover() == nil {
			t.Error("a nil typed handler did not panic at registration")
		}
	}()
	payloads.OnPushEvent(em, nil)
}

func TestParseUnknownEvent(t *testing.T) {
	body := `{"action":"beamed","thing":{"id":1}}`
	p, err := payloads.Parse("time_travel", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := p.(*payloads.UnknownEvent)
	if !ok || u.Name != "time_travel" || u.Action != "beamed" || string(u.Raw) != body {
		t.Fatalf("Parse = %#v", p)
	}
	if payloads.PayloadName(p) != "time_travel.beamed" {
		t.Errorf("PayloadName = %q", payloads.PayloadName(p))
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":`, ``} {
		if _, err := payloads.Parse("time_travel", []byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	if _, err := payloads.Parse("push", []byte(`[1]`)); !errors.Is(err, payloads.ErrType) {
		t.Errorf("Parse(push, [1]) = %v, want ErrType", err)
	}
	if _, err := payloads.Parse("push", []byte(`{"ref":`)); !errors.Is(err, payloads.ErrSyntax) {
		t.Errorf("Parse(push, truncated) = %v, want ErrSyntax", err)
	}
}

func TestNamesTupleIsACopy(t *testing.T) {
	a := payloads.EmitterEventNames()
	if len(a) == 0 || a[0] == "" {
		t.Fatal("no names")
	}
	first := a[0]
	a[0] = "changed"
	if b := payloads.EmitterEventNames(); b[0] != first {
		t.Errorf("changing the returned slice changed the tuple: %q", b[0])
	}
	for _, n := range []string{"issues", "issues.opened", "push"} {
		if !payloads.IsKnownEventName(n) {
			t.Errorf("IsKnownEventName(%q) = false", n)
		}
	}
	for _, n := range []string{"", "issues.", "issues.teleported", "changed", "push.x", "*", "error"} {
		if payloads.IsKnownEventName(n) {
			t.Errorf("IsKnownEventName(%q) = true", n)
		}
	}
}

// TestActionMemberDecodesAsRouted: the struct Parse picks holds the action that
// routed the delivery (the last "action" member, if a string), and a non-string
// or repeated action member still encodes back as it came.
func TestActionMemberDecodesAsRouted(t *testing.T) {
	for _, tc := range []struct {
		body, name string
	}{
		{`{"action":1,"action":"opened"}`, "issues.opened"},
		{`{"action":"opened","action":null}`, "issues"},
		{`{"action":"closed","action":{"x":"opened"}}`, "issues"},
		{`{"action":"opened","action":[1],"action":"closed"}`, "issues.closed"},
		{`{"\u0061ction":"opened"}`, "issues.opened"},
		{`{"issue":{"number":1}}`, "issues"},
	} {
		p, err := payloads.Parse("issues", []byte(tc.body))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.body, err)
			continue
		}
		if got := payloads.PayloadName(p); got != tc.name {
			t.Errorf("Parse(%s) is %q, want %q", tc.body, got, tc.name)
		}
		if ev, ok := p.(payloads.IssuesEvent); !ok || tc.name != "issues"+map[bool]string{true: "." + ev.GetAction(), false: ""}[ev.GetAction() != ""] {
			t.Errorf("Parse(%s): GetAction disagrees with the name %q", tc.body, tc.name)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Errorf("Marshal after %s: %v", tc.body, err)
			continue
		}
		if d := jsonDiff(t, []byte(tc.body), out); d != "" {
			t.Errorf("%s re-encoded as %s (-want +got):\n%s", tc.body, out, d)
		}
	}
}
