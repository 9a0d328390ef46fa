package bench

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestRegisterEveryEvent checks that RegisterEveryEvent leaves no event the
// schema knows without a handler, so that typedall.go, written from the
// On…Event helpers of payloads/register.go, goes stale loudly when an event
// is added.
func TestRegisterEveryEvent(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Secret: "s", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	RegisterEveryEvent(wh, func(context.Context, payloads.Event[*payloads.PushEvent]) error { return nil })
	events := 0
	for _, name := range payloads.EmitterEventNames() {
		event, action, _ := strings.Cut(name, ".")
		if action == "" {
			events++
		}
		if !wh.Handles(event, action) {
			t.Errorf("no handler for %q", name)
		}
	}
	if events < 70 {
		t.Errorf("%d events in the schema; expected at least 70", events)
	}
}
