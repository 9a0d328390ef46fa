package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

// A Token prints as [redacted] however it is printed, alone or inside
// another value.
func TestTokenRedacted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{})
	a := e.app(nil)
	tok, _, err := a.InstallationToken(t.Context(), testInstallation, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := tok.Reveal()
	if secret == "" || secret != e.forge.Tokens()[0].Token {
		t.Fatal("Reveal does not return the token issued")
	}
	type holder struct {
		Public  app.Token
		private app.Token
		Ptr     *app.Token
	}
	h := holder{tok, tok, &tok}
	js, _ := json.Marshal(h)
	var out strings.Builder
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%T"} {
		fmt.Fprintf(&out, f+"|"+f+"|"+f+"\n", tok, h, &tok)
	}
	out.Write(js)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "tok", tok, "h", h, "any", any(tok))
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "tok", tok, "h", h, "ptr", &tok)
	if strings.Contains(out.String(), secret) || strings.Contains(out.String(), secret[4:20]) {
		t.Errorf("the token appears in:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("no [redacted] in:\n%s", out.String())
	}
}

// A token never appears in the logs (debug level), in errors, or in the
// inspector's page and JSON, over deliveries whose handlers used the client,
// got refused, failed with the token in reach, and were replayed.
func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
	a := e.app(func(o *app.Options) { o.MaxWait = time.Second })
	wrongApp := e.app(func(o *app.Options) { o.AppID = "7" })
	wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	wh.On("issue_comment.created", func(ctx context.Context, ev emitter.Event) error {
		c, err := a.Client(ctx)
		if err != nil {
			return err
		}
		if _, err := e.comment(ctx, c, "thanks"); err != nil {
			return err
		}
		tok, _, err := a.InstallationToken(ctx, testInstallation, nil)
		if err != nil {
			return err
		}
		e.log.InfoContext(ctx, "handler has a token", "token", tok, "app", a)
		// Throttled beyond MaxWait: the handler fails, with the token
		// printed into its error in every way a careless handler might.
		e.forge.Throttle(testInstallation, time.Minute)
		_, err = e.comment(ctx, c, "throttled")
		if !errors.Is(err, app.ErrRateLimited) {
			return fmt.Errorf("want a rate limit, got %v", err)
		}
		_, _, werr := wrongApp.InstallationToken(ctx, testInstallation, nil)
		errs = append(errs, err.Error(), werr.Error())
		return fmt.Errorf("handler: %w; %v; token %v %+v %#v", err, werr, tok, tok, struct{ T app.Token }{tok})
	})
	insp := inspector.New(inspector.Options{Webhooks: wh, Logger: e.log})
	defer insp.Close()
	url := receiver(t, wh, webhooks.MiddlewareOptions{OnResult: insp.OnResult, Timeout: -1})
	if code, err := deliver(http.DefaultClient, url, "d-leak", "issue_comment", commentDelivery(testInstallation, e.forge.URL)); err != nil || code != 500 {
		t.Fatalf("delivery: %d %v, want the handler's 500", code, err)
	}
	if err := insp.Ring().Replay(t.Context(), "d-leak"); err == nil {
		t.Fatal("replay succeeded, want the handler's error again")
	} else {
		errs = append(errs, err.Error())
	}
	page := httptest.NewServer(insp)
	defer page.Close()
	var pages strings.Builder
	for _, p := range []string{"/", "/api/deliveries", "/api/delivery?key=d:d-leak", "/api/stats"} {
		res, err := http.Get(page.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("inspector %s: %d %s", p, res.StatusCode, b)
		}
		pages.Write(b)
	}
	logs, errText := e.logs.String(), strings.Join(errs, "\n")
	// What is grepped holds what it should: else the test could not fail.
	for what, want := range map[string][2]string{
		"log":       {logs, "app: installation token issued"},
		"log token": {logs, "token=[redacted]"},
		"errors":    {errText, "is rate limited (Retry-After)"},
		"inspector": {pages.String(), "token [redacted] [redacted]"},
	} {
		if !strings.Contains(want[0], want[1]) {
			t.Fatalf("%s lacks %q:\n%s", what, want[1], want[0])
		}
	}
	jwt, _ := a.JWT(time.Now())
	secrets := map[string]string{"JWT": jwt.Reveal(), "JWT header": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9"}
	for i, tk := range e.forge.Tokens() {
		secrets[fmt.Sprint("token ", i)] = tk.Token
		secrets[fmt.Sprint("token ", i, " tail")] = tk.Token[len(tk.Token)-16:]
	}
	if len(e.forge.Tokens()) == 0 {
		t.Fatal("no token was issued")
	}
	for name, s := range secrets {
		for where, text := range map[string]string{"logs": logs, "errors": errText, "inspector": pages.String()} {
			if strings.Contains(text, s) {
				t.Errorf("the %s appears in the %s", name, where)
			}
		}
	}
}

// Client finds the installation in the delivery, and says which event has
// none; outside a handler it says so.
func TestClientFromDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	wh, _ := webhooks.New(webhooks.Options{Secret: testSecret, Logger: e.log})
	var got []string
	wh.OnAny(func(ctx context.Context, ev emitter.Event) error {
		id, err := app.InstallationID(ctx)
		if _, cerr := a.Client(ctx); (cerr == nil) != (err == nil) {
			t.Errorf("Client and InstallationID disagree: %v, %v", cerr, err)
		}
		got = append(got, fmt.Sprint(id, " ", err))
		return nil
	})
	for _, tt := range []struct{ event, body string }{
		{"issue_comment", string(commentDelivery(testInstallation, e.forge.URL))},
		{"issues", `{"action":"opened","installation":{"id":"42"}}`},
		{"push", `{"ref":"refs/heads/main","repository":{"id":1,"installation":{"id":9}}}`},
		{"ping", `{"zen":"x","installation":{"id":7,"id":8}}`},
	} {
		if err := wh.VerifyAndReceive(t.Context(), webhooks.Delivery{ID: "d-" + tt.event, Name: tt.event, Payload: []byte(tt.body), Signature: sign(t, tt.body)}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"42 <nil>",
		`0 app: event "issues.opened" (delivery "d-issues"): the delivery names no installation: it was not sent to an app (a repository or organization webhook?)`,
		`0 app: event "push" (delivery "d-push"): the delivery names no installation: it was not sent to an app (a repository or organization webhook?)`,
		"8 <nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := a.Client(t.Context()); !errors.Is(err, app.ErrNoDelivery) {
		t.Errorf("outside a handler: %v", err)
	}
}
