package payloads_test

import (
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
)

// TestParsePicksTheRoutedAction: Parse decodes into the struct of the action
// that routing reads (emitter.Event.Action), whether the action is the first
// member (the one-pass path) or not, duplicated, escaped, or not ASCII.
func TestParsePicksTheRoutedAction(t *testing.T) {
	for _, body := range []string{
		`{"action":"opened"}`,
		` { "action" : "opened" , "issue" : {"number":1} } `,
		`{"issue":{"number":1},"action":"closed"}`,
		`{"action":"opened","issue":{"action":"closed"}}`,
		`{"action":"opened","action":"closed"}`,
		`{"action":"opened","\u0061ction":"closed"}`,
		`{"action":"op\u0065ned"}`,
		`{"action":"opened","action":null}`,
		`{"action":"öffnen"}`,
		`{"action":7}`,
		`{}`,
	} {
		want := emitter.Event{Payload: []byte(body)}.Action()
		p, err := payloads.Parse("issues", []byte(body))
		if err != nil {
			t.Errorf("Parse(%s): %v", body, err)
			continue
		}
		if got := p.(payloads.IssuesEvent).GetAction(); got != want {
			t.Errorf("Parse(%s): action %q, routing reads %q", body, got, want)
		}
		wantName := "issues"
		if want != "" {
			wantName += "." + want
		}
		if got := payloads.PayloadName(p); got != wantName {
			t.Errorf("Parse(%s): a %T named %q, want %q", body, p, got, wantName)
		}
	}
}

// TestParseErrorsDoNotDependOnThePath: a body that fails to decode gives the
// same error whether its action came first or not.
func TestParseErrorsDoNotDependOnThePath(t *testing.T) {
	a, errA := payloads.Parse("issues", []byte(`{"action":"opened","issue":{"number":"x"}}`))
	b, errB := payloads.Parse("issues", []byte(`{"issue":{"number":"x"},"action":"opened"}`))
	if a != nil || b != nil || errA == nil || errB == nil {
		t.Fatalf("want two errors, got %v, %v", errA, errB)
	}
	if errA.(*payloads.DecodeError).Type != errB.(*payloads.DecodeError).Type {
		t.Errorf("errors name different types: %v; %v", errA, errB)
	}
}
