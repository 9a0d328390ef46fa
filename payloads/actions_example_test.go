package payloads_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// One typed handler for "pull_request.opened" and "pull_request.synchronize":
// the Go form of a handler for a set of names. It gets the event's family
// interface, whose methods are what those actions share, so it reads the
// installation id without a type switch.
func ExampleOnPullRequestEvent_actions() {
	wh, err := webhooks.New(webhooks.Options{Secret: "an example secret, 32 bytes long"})
	if err != nil {
		panic(err)
	}
	payloads.OnPullRequestEvent(wh, func(ctx context.Context, e payloads.Event[payloads.PullRequestEvent]) error {
		fmt.Println(e.Payload.GetAction(), "installation", e.Payload.GetInstallation().GetID(),
			"head", e.Payload.GetPullRequest().GetHead().GetSHA())
		return nil
	}, "opened", "synchronize")

	for _, action := range []string{"opened", "closed", "synchronize"} {
		body := `{"action":"` + action + `","number":1,"installation":{"id":42},"pull_request":{"head":{"sha":"abc123"}}}`
		if err := wh.Receive(context.Background(), emitter.Event{Name: "pull_request", Payload: []byte(body)}); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// opened installation 42 head abc123
	// synchronize installation 42 head abc123
}

// TestOnActions: a handler registered for some actions runs for those only
// (a pull_request.closed delivery does not reach it), RemoveListener removes
// it with one call, and an unknown action panics at registration.
func TestOnActions(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Secret: "a test secret of 32 bytes length"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var calls atomic.Int32
	l := payloads.OnPullRequestEvent(wh, func(ctx context.Context, e payloads.Event[payloads.PullRequestEvent]) error {
		calls.Add(1)
		got = append(got, payloads.PayloadName(e.Payload))
		return nil
	}, "opened", "synchronize")
	deliver := func(action string) {
		t.Helper()
		body := `{"action":"` + action + `","number":1,"installation":{"id":42}}`
		if err := wh.Receive(context.Background(), emitter.Event{Name: "pull_request", Payload: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"opened", "closed", "synchronize", "reopened"} {
		deliver(a)
	}
	if strings.Join(got, ",") != "pull_request.opened,pull_request.synchronize" {
		t.Errorf("the handler got %q", got)
	}
	if n := wh.RemoveListenerNames([]string{"pull_request.opened", "pull_request.synchronize"}, l); n != 2 {
		t.Errorf("RemoveListenerNames removed %d registrations, want 2", n)
	}
	deliver("opened")
	if calls.Load() != 2 {
		t.Errorf("the handler ran %d times, want 2 (none after removal)", calls.Load())
	}

	for _, tc := range []struct {
		actions []string
		want    string
	}{
		{[]string{"opened", "opend"}, `"opend" is not an action of "pull_request"`},
		{[]string{"opened", "opened"}, `action "opened" is listed twice`},
		{[]string{""}, `"" is not an action`},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("actions %q: panic %v, want one containing %q", tc.actions, r, tc.want)
				}
			}()
			payloads.OnPullRequestEvent(wh, func(context.Context, payloads.Event[payloads.PullRequestEvent]) error { return nil }, tc.actions...)
		}()
	}
	// Free-form actions: any action is known, where the schema has them.
	if freeFormActions(t, "repository_dispatch") {
		payloads.OnRepositoryDispatchEvent(wh, func(context.Context, payloads.Event[payloads.RepositoryDispatchEvent]) error { return nil }, "deploy", "my_custom_type")
	}
}
