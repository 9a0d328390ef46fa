package bottest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/bottest"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// A handler's final error (webhooks.Permanent) leaves the delivery dead
// after exactly one attempt, with the quick retries unused; so does the
// forge's "Resource not accessible by integration", which the app client
// returns as a final *app.RefusedError.
func TestFinalErrorDeadAfterOneAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler func(bot *bottest.Bot, wh *webhooks.Webhooks)
		wantErr string
	}{
		{
			name: "webhooks.Permanent",
			handler: func(_ *bottest.Bot, wh *webhooks.Webhooks) {
				wh.On("issue_comment.created", func(context.Context, emitter.Event) error { return webhooks.Permanent(errors.New("no")) })
			},
			wantErr: "no",
		},
		{
			name: "not accessible by integration",
			handler: func(bot *bottest.Bot, wh *webhooks.Webhooks) {
				bot.Forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 403, Body: `{"message":"Resource not accessible by integration"}`})
				payloads.OnIssueCommentCreatedEvent(wh, thankCommenter(bot.App))
			},
			wantErr: "app: installation 1: POST /repos/Codertocat/Hello-World/issues/1/comments: 403 Forbidden: Resource not accessible by integration",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bot := bottest.New(t)
			wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
			tt.handler(bot, wh)
			bot.Start(wh)
			rec := bot.Send("issue_comment.created")
			if rec.Status != delivery.StatusDead || len(rec.Attempts) != 1 || !rec.Final() {
				t.Fatalf("record %s with %d attempts (final %v), last error %q; want dead and final after 1 (retries left: %d)",
					rec.Status, len(rec.Attempts), rec.Final(), rec.LastError(), len(bottest.RetryDelays))
			}
			if got := rec.LastError(); !strings.Contains(got, tt.wantErr) {
				t.Errorf("last error %q, want it to contain %q", got, tt.wantErr)
			}
		})
	}
}
