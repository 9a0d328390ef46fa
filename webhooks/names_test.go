package webhooks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// Names lists each name a handler is registered for, typed handlers
// included, sorted and once each; OnAny and OnError add none, and a name
// whose last handler is removed goes.
func TestNames(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	if err != nil {
		t.Fatal(err)
	}
	if got := wh.Names(); len(got) != 0 {
		t.Fatalf("no handlers: %q", got)
	}
	h := func(context.Context, emitter.Event) error { return nil }
	wh.On("push", h)
	l := wh.On("check_run.completed", h)
	wh.OnNames([]string{"issues.opened", "push"}, h)
	payloads.OnIssueCommentCreatedEvent(wh, func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error { return nil })
	wh.OnAny(h)
	wh.OnError(func(context.Context, *emitter.Error) {})
	want := []string{"check_run.completed", "issue_comment.created", "issues.opened", "push"}
	if got := wh.Names(); !slices.Equal(got, want) {
		t.Errorf("Names %q, want %q", got, want)
	}
	wh.RemoveListener("check_run.completed", l)
	if got := wh.Names(); !slices.Equal(got, want[1:]) {
		t.Errorf("after removal: %q, want %q", got, want[1:])
	}
}

// Names lists what the handlers wait for: give it to
// app.App.CheckSubscriptions (or 'forgehooks doctor') to learn whether the
// forge will ever send it to the app.
func ExampleWebhooks_Names() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "s3cret"})
	wh.On("push", func(context.Context, emitter.Event) error { return nil })
	payloads.OnIssuesOpenedEvent(wh, func(context.Context, payloads.Event[*payloads.IssuesOpenedEvent]) error { return nil })
	fmt.Println(wh.Names())
	// Output: [issues.opened push]
}
