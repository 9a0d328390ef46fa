package gogithub_test

import (
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/bottest"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/examples/gogithub"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

const secret = "gogithub-example-secret-0123456789"

// The bot replies with go-github's Issues.CreateComment, as the installation
// that sent the delivery, to a self-hosted forge (the fake forge serves its
// API under /api/v3, where WithEnterpriseURLs puts it).
func TestThanksThroughGoGitHub(t *testing.T) {
	bot := bottest.New(t, bottest.Options{Forge: forgetest.Options{BasePath: "/api/v3"}})
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	gogithub.Register(wh, bot.App, bot.Forge.URL)
	bot.Start(wh)
	rec := bot.Send("issue_comment.created")
	if rec.Status != delivery.StatusHandled {
		t.Fatalf("%s: %s", rec.Status, rec.LastError())
	}
	c := bot.Forge.Comments()
	if len(c) != 1 || c[0].Body != "Thanks, @Codertocat!" || c[0].Owner != "Codertocat" || c[0].Repo != "Hello-World" || c[0].Issue != 1 || c[0].Installation != bottest.Installation {
		t.Fatalf("comments: %+v", c)
	}
	for _, r := range bot.Forge.Requests() {
		if r.Status >= 400 {
			t.Errorf("%s %s answered %d", r.Method, r.Path, r.Status)
		}
	}
}

// A refused comment (the forge answers 403 "Resource not accessible by
// integration": the installation lacks the permission) is final: app's
// transport returns it as an *app.RefusedError, which go-github hands back
// wrapped, and the inbox keeps a dead letter after that one attempt instead
// of retrying what no retry can cure.
func TestRefusedCommentIsADeadLetter(t *testing.T) {
	bot := bottest.New(t, bottest.Options{Forge: forgetest.Options{BasePath: "/api/v3"}})
	bot.Forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 403, Times: 3,
		Body: `{"message":"Resource not accessible by integration","documentation_url":"https://docs.example/rest"}`})
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	gogithub.Register(wh, bot.App, bot.Forge.URL)
	bot.Start(wh)
	rec := bot.Send("issue_comment.created")
	if rec.Status != delivery.StatusDead || len(rec.Attempts) != 1 || !rec.Final() {
		t.Fatalf("%s after %d attempts (final: %v): %s", rec.Status, len(rec.Attempts), rec.Final(), rec.LastError())
	}
	if got := rec.LastError(); !strings.Contains(got, "403 Forbidden: Resource not accessible by integration") {
		t.Errorf("last error %q does not carry the forge's answer", got)
	}
	if n := len(bot.Forge.Comments()); n != 0 {
		t.Errorf("%d comments made", n)
	}
}
