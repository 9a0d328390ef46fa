package payloads_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
)

// TestDuplicateActionTyped: a payload with several top-level "action" members
// (or one in another case, escaped, nested, not a string) routes by one action,
// and every handler of the delivery, typed or raw, sees that same action: the
// typed action handler that runs is that action's, its struct holds it, and
// the event-level typed handler gets that action's struct (the unknown-action
// struct when the delivery has no action).
func TestDuplicateActionTyped(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		routes string // "" for no action
	}{
		{"last wins", `{"action":"opened","issue":{"number":1},"action":"closed"}`, "closed"},
		{"last wins, other order", `{"action":"closed","action":"opened"}`, "opened"},
		{"escaped key", `{"action":"opened","\u0061ction":"closed"}`, "closed"},
		{"escaped value", `{"action":"closed","action":"op\u0065ned"}`, "opened"},
		{"other case is another key", `{"action":"opened","ACTION":"closed","Action":"closed"}`, "opened"},
		{"nested does not count", `{"action":"opened","issue":{"action":"closed"}}`, "opened"},
		{"last is null", `{"action":"opened","action":null}`, ""},
		{"last is a number", `{"action":"closed","action":1}`, ""},
		{"last is an object", `{"action":"closed","action":{"x":"opened"}}`, ""},
		{"last is empty", `{"action":"opened","action":""}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := emitter.New(emitter.Options{})
			var mu sync.Mutex
			var ran []string
			record := func(format string, args ...any) {
				mu.Lock()
				ran = append(ran, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			payloads.OnIssuesOpenedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
				record("typed opened %q", e.Payload.Action)
				return nil
			})
			payloads.OnIssuesClosedEvent(em, func(ctx context.Context, e payloads.Event[*payloads.IssuesClosedEvent]) error {
				record("typed closed %q", e.Payload.Action)
				return nil
			})
			payloads.OnIssuesEvent(em, func(ctx context.Context, e payloads.Event[payloads.IssuesEvent]) error {
				record("typed event %T %q", e.Payload, e.Payload.GetAction())
				return nil
			})
			for _, a := range []string{"opened", "closed"} {
				em.On("issues."+a, func(ctx context.Context, e emitter.Event) error {
					record("raw %s %q", a, e.Action())
					return nil
				})
			}
			em.On("issues", func(ctx context.Context, e emitter.Event) error {
				record("raw event %q", e.Action())
				return nil
			})
			if err := em.Receive(context.Background(), emitter.Event{ID: "d", Name: "issues", Payload: []byte(tt.body)}); err != nil {
				t.Fatalf("Receive: %v", err)
			}

			var want []string
			switch tt.routes {
			case "opened":
				want = []string{`typed opened "opened"`, `raw opened "opened"`, `typed event *payloads.IssuesOpenedEvent "opened"`}
			case "closed":
				want = []string{`typed closed "closed"`, `raw closed "closed"`, `typed event *payloads.IssuesClosedEvent "closed"`}
			case "":
				want = []string{`typed event *payloads.IssuesUnknownEvent ""`}
			}
			want = append(want, fmt.Sprintf("raw event %q", tt.routes))
			slices.Sort(ran)
			slices.Sort(want)
			if !slices.Equal(ran, want) {
				t.Errorf("handlers saw\n%q\nwant\n%q", ran, want)
			}

			// Parse, without an emitter, agrees.
			p, err := payloads.Parse("issues", []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			wantName := "issues"
			if tt.routes != "" {
				wantName += "." + tt.routes
			}
			if got := payloads.PayloadName(p); got != wantName {
				t.Errorf("Parse gives %T named %q, want %q", p, got, wantName)
			}
		})
	}
}
