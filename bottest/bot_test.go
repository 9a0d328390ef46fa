package bottest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/bottest"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// thankCommenter is a bot's handler: it thanks whoever commented, as the
// installation that sent the delivery.
func thankCommenter(a *app.App) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
	return func(ctx context.Context, e payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
		c, err := a.Client(ctx)
		if err != nil {
			return err
		}
		reply, _ := json.Marshal(map[string]string{"body": "Thanks, @" + e.Payload.Sender.Login + "!"})
		res, err := c.Post(e.Payload.Issue.CommentsURL, "application/json", bytes.NewReader(reply))
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("replying: %s", res.Status)
		}
		return nil
	}
}

// readme:begin
func TestBotThanksCommenters(t *testing.T) {
	bot := bottest.New(t) // the fake forge, and bot.App for it
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	payloads.OnIssueCommentCreatedEvent(wh, thankCommenter(bot.App))
	bot.Start(wh)                            // the receiver and its inbox, until the test ends
	rec := bot.Send("issue_comment.created") // once handled (or dead)
	if c := bot.Forge.Comments(); rec.Status != delivery.StatusHandled || len(c) != 1 || c[0].Body != "Thanks, @Codertocat!" {
		t.Fatalf("%s %q, comments %+v", rec.Status, rec.LastError(), c)
	}
}

// readme:end

// TestReadme: the README's bot test is TestBotThanksCommenters, line for
// line, in a code block, and at most 25 lines.
func TestReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("bot_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok1 := strings.Cut(string(src), "// readme:begin\n")
	test, _, ok2 := strings.Cut(after, "\n// readme:end\n")
	if !ok1 || !ok2 {
		t.Fatal("markers readme:begin and readme:end not found in bot_test.go")
	}
	if !strings.Contains(string(readme), "```go\n"+test+"```\n") {
		t.Errorf("README.md has no code block that is TestBotThanksCommenters:\n%s", test)
	}
	if n := strings.Count(test, "\n"); n > 25 {
		t.Errorf("the README's bot test is %d lines, want at most 25", n)
	}
}

// A handler that fails makes a dead letter after the quick retries, and Send
// returns it with every attempt's error.
func TestSendReturnsDeadLetter(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t)
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	wh.On("issues.opened", func(context.Context, emitter.Event) error { return errors.New("no luck") })
	bot.Start(wh)
	rec := bot.Send("issues.opened")
	if rec.Status != delivery.StatusDead || len(rec.Attempts) != len(bottest.RetryDelays)+1 || !strings.Contains(rec.LastError(), "no luck") {
		t.Fatalf("record %s with %d attempts, last error %q; want dead after %d", rec.Status, len(rec.Attempts), rec.LastError(), len(bottest.RetryDelays)+1)
	}
}

// Payload points the API URLs at the fake forge and adds the installation a
// payload names to the forge; it adds one only when asked (AppHookOn), and
// AppHookOff removes one.
func TestPayload(t *testing.T) {
	t.Parallel()
	named := []byte(`{"action":"created","installation":{"id":77},"url":"` + app.DefaultAPIURL + `/repos/o/r"}`)
	unnamed := []byte(`{"action":"created","url":"` + app.DefaultAPIURL + `/repos/o/r"}`)
	tests := []struct {
		name    string
		hook    bottest.AppHook
		payload []byte
		want    int64 // 0: none
	}{
		{"auto keeps", bottest.AppHookAuto, named, 77},
		{"auto adds none", bottest.AppHookAuto, unnamed, 0},
		{"on keeps", bottest.AppHookOn, named, 77},
		{"on adds", bottest.AppHookOn, unnamed, bottest.Installation},
		{"off removes", bottest.AppHookOff, named, 0},
		{"off adds none", bottest.AppHookOff, unnamed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bot := bottest.New(t, bottest.Options{AppHook: tt.hook})
			p := bot.Payload(tt.payload)
			if bytes.Contains(p, []byte(app.DefaultAPIURL)) || !bytes.Contains(p, []byte(bot.Forge.URL+"/repos/o/r")) {
				t.Errorf("URLs not rewritten: %s", p)
			}
			var in struct {
				Installation *struct{ ID int64 } `json:"installation"`
			}
			if err := json.Unmarshal(p, &in); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == 0 && in.Installation != nil:
				t.Errorf("installation %d, want none: %s", in.Installation.ID, p)
			case tt.want != 0 && (in.Installation == nil || in.Installation.ID != tt.want):
				t.Errorf("%s: want installation %d", p, tt.want)
			case tt.want != 0:
				if _, _, err := bot.App.InstallationToken(t.Context(), tt.want, nil); err != nil {
					t.Errorf("the payload's installation does not exist in the forge: %v", err)
				}
			}
		})
	}
}

// Several deliveries, each waited for; the comments are made as the
// payload's installation.
func TestSeveralDeliveries(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t)
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	payloads.OnIssueCommentCreatedEvent(wh, thankCommenter(bot.App))
	bot.Start(wh)
	for range 3 {
		if rec := bot.Send("issue_comment.created"); rec.Status != delivery.StatusHandled {
			t.Fatalf("%s: %s", rec.Status, rec.LastError())
		}
	}
	var m map[string]any
	if err := json.Unmarshal(webhookstest.Payload("issue_comment.created"), &m); err != nil {
		t.Fatal(err)
	}
	m["installation"] = map[string]any{"id": 9}
	p, _ := json.Marshal(m)
	rec := bot.SendPayload("issue_comment", bot.Payload(p))
	if rec.Status != delivery.StatusHandled {
		t.Fatalf("%s: %s", rec.Status, rec.LastError())
	}
	c := bot.Forge.Comments()
	if len(c) != 4 || c[0].Installation != bottest.Installation || c[3].Installation != 9 {
		t.Fatalf("comments: %+v", c)
	}
}

// StartReceiver keeps the options it is given: a path of its own, and an
// inbox without retries (RetryDelays empty: a failure is a dead letter at
// once), still in the test's directory.
func TestStartReceiverOptions(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t)
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	wh.On("issues.opened", func(context.Context, emitter.Event) error { return errors.New("no luck") })
	bot.StartReceiver(receiver.Options{Webhooks: wh, Middleware: webhooks.MiddlewareOptions{Path: "/hooks"},
		Inbox: &inbox.Options{RetryDelays: []time.Duration{}}})
	if !strings.HasSuffix(bot.URL, "/hooks") {
		t.Errorf("URL %q, want the path given", bot.URL)
	}
	if rec := bot.Send("issues.opened"); rec.Status != delivery.StatusDead || len(rec.Attempts) != 1 {
		t.Fatalf("record %s after %d attempts, want dead after 1", rec.Status, len(rec.Attempts))
	}
}
