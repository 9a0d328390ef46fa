package bottest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/bottest"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// twoTenants have secrets of their own.
var twoTenants = webhooks.StaticTenants{
	"acme":   {Secrets: []string{"acme's secret for tests only"}},
	"globex": {Secrets: []string{"globex's secret for tests only", "globex's old secret"}},
}

// seen records, per tenant, the deliveries handled and whether they named an
// installation.
type seen struct {
	mu        sync.Mutex
	tenants   []string
	installed []bool
}

func (s *seen) handler(ctx context.Context, e emitter.Event) error {
	d, _ := webhooks.DeliveryFrom(ctx)
	_, err := app.InstallationID(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tenants = append(s.tenants, d.Tenant)
	s.installed = append(s.installed, err == nil)
	return nil
}

// SendAs delivers as each tenant's own hook: signed with that tenant's
// secret, to its path; both are handled, each record names its tenant, and
// neither payload names an installation (an organization's hook sends none,
// though the example the forge publishes has one).
func TestSendAsTwoTenants(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t, bottest.Options{Tenants: twoTenants})
	wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(twoTenants, webhooks.TenantsOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	wh.On("issue_comment.created", s.handler)
	bot.Start(wh)
	if !strings.HasSuffix(bot.URL, bottest.TenantPath) || bot.TenantURL("acme") != strings.Replace(bot.URL, "{tenant}", "acme", 1) {
		t.Errorf("URL %q, TenantURL %q", bot.URL, bot.TenantURL("acme"))
	}
	for _, tenant := range []string{"acme", "globex", "acme"} {
		rec := bot.SendAs(tenant, "issue_comment.created")
		if rec.Status != delivery.StatusHandled || rec.Tenant != tenant {
			t.Fatalf("SendAs(%q): %s, tenant %q, error %q", tenant, rec.Status, rec.Tenant, rec.LastError())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Join(s.tenants, ",") != "acme,globex,acme" || s.installed[0] || s.installed[1] || s.installed[2] {
		t.Errorf("handled for tenants %q, with installations %v; want acme,globex,acme without", s.tenants, s.installed)
	}
}

// Send works with tenants: as Options.Tenant, or the first of a
// StaticTenants, and as the app's hook (an installation named); AppHookOn
// makes SendAs name one too.
func TestSendWithTenants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      bottest.Options
		send      func(*bottest.Bot) delivery.Record
		tenant    string
		installed bool
	}{
		{"first tenant", bottest.Options{Tenants: twoTenants}, func(b *bottest.Bot) delivery.Record { return b.Send("issue_comment.created") }, "acme", true},
		{"Options.Tenant", bottest.Options{Tenants: twoTenants, Tenant: "globex"}, func(b *bottest.Bot) delivery.Record { return b.Send("issue_comment.created") }, "globex", true},
		{"SendAs AppHookOn", bottest.Options{Tenants: twoTenants, AppHook: bottest.AppHookOn}, func(b *bottest.Bot) delivery.Record { return b.SendAs("globex", "issue_comment.created") }, "globex", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bot := bottest.New(t, tt.opts)
			wh, _ := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(twoTenants, webhooks.TenantsOptions{})})
			var s seen
			wh.On("issue_comment.created", s.handler)
			bot.Start(wh)
			rec := tt.send(bot)
			s.mu.Lock()
			defer s.mu.Unlock()
			if rec.Status != delivery.StatusHandled || rec.Tenant != tt.tenant || len(s.installed) != 1 || s.installed[0] != tt.installed {
				t.Fatalf("%s, tenant %q (want %q), installations %v (want %v): %s", rec.Status, rec.Tenant, tt.tenant, s.installed, tt.installed, rec.LastError())
			}
		})
	}
}

// triage is a bot's handler: on a new comment it labels the issue and
// answers, as the installation that sent the delivery.
func triage(a *app.App) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
	return func(ctx context.Context, e payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
		c, err := a.Client(ctx)
		if err != nil {
			return err
		}
		post := func(url string, v any, want int) error {
			b, _ := json.Marshal(v)
			res, err := c.Post(url, "application/json", bytes.NewReader(b))
			if err != nil {
				return err
			}
			defer res.Body.Close()
			if res.StatusCode != want {
				return fmt.Errorf("POST %s: %s", url, res.Status)
			}
			if url == e.Payload.Issue.URL+"/labels" {
				var labels []struct{ Name string }
				if err := json.NewDecoder(res.Body).Decode(&labels); err != nil || len(labels) != 1 || labels[0].Name != "triage" {
					return fmt.Errorf("labels answered: %+v (%v)", labels, err)
				}
			}
			return nil
		}
		if err := post(e.Payload.Issue.URL+"/labels", map[string]any{"labels": []string{"triage"}}, http.StatusOK); err != nil {
			return err
		}
		return post(e.Payload.Issue.CommentsURL, map[string]string{"body": "Labelled for triage."}, http.StatusCreated)
	}
}

// A handler labels and comments through app.Client for a delivery whose
// payload names an installation (the example's own, 2): the fake forge
// answers both as its REST description says and records them, made as that
// installation.
func TestHandlerLabelsAndComments(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t)
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	payloads.OnIssueCommentCreatedEvent(wh, triage(bot.App))
	bot.Start(wh)
	var m map[string]any
	if err := json.Unmarshal(webhookstest.Payload("issue_comment.created"), &m); err != nil {
		t.Fatal(err)
	}
	m["installation"] = map[string]any{"id": 2}
	p, _ := json.Marshal(m)
	rec := bot.SendPayload("issue_comment", bot.Payload(p))
	if rec.Status != delivery.StatusHandled {
		t.Fatalf("%s: %s", rec.Status, rec.LastError())
	}
	c := bot.Forge.Comments()
	if len(c) != 1 || c[0].Installation != 2 || c[0].Body != "Labelled for triage." {
		t.Errorf("comments %+v", c)
	}
	var ops []string
	for _, r := range bot.Forge.Requests() {
		if r.Installation == 2 {
			ops = append(ops, r.Method+" "+r.Operation+" "+string(r.Body))
		}
	}
	want := []string{`POST issues/add-labels {"labels":["triage"]}`, `POST issues/create-comment {"body":"Labelled for triage."}`}
	if strings.Join(ops, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests as installation 2:\n%s\nwant\n%s", strings.Join(ops, "\n"), strings.Join(want, "\n"))
	}
}

// A handler that fails for want of an installation (SendAs: a tenant's hook
// names none, and the tenant has neither an installation nor a token) makes a
// dead letter after exactly one attempt: app.Client's error wraps
// app.ErrNoCredentials as final (webhooks.Permanent), and says what to
// configure.
func TestSendAsNoInstallation(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t, bottest.Options{Tenants: twoTenants})
	wh, _ := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(twoTenants, webhooks.TenantsOptions{})})
	payloads.OnIssueCommentCreatedEvent(wh, triage(bot.App))
	bot.Start(wh)
	rec := bot.SendAs("acme", "issue_comment.created")
	if rec.Status != delivery.StatusDead || len(rec.Attempts) != 1 || !rec.Final() {
		t.Fatalf("%s after %d attempts (final %v): %q; want dead and final after 1 (retries left: %d)",
			rec.Status, len(rec.Attempts), rec.Final(), rec.LastError(), len(bottest.RetryDelays))
	}
	const fix = `set an installation or a token for tenant "acme"`
	if got := rec.LastError(); !strings.Contains(got, app.ErrNoCredentials.Error()) || !strings.Contains(got, fix) {
		t.Errorf("last error %q; want it to say %q and %q", got, app.ErrNoCredentials, fix)
	}
	if c := bot.Forge.Comments(); len(c) != 0 {
		t.Errorf("comments %+v", c)
	}
}

// A tenant's own hook names no installation, so the tenant says how to
// answer: as its Installation, or with its Token (the fake forge seeing that
// token); a handler's final error leaves the delivery dead after exactly one
// attempt. bot.App reads the tenants from Options.Tenants, and the fake forge
// holds the tenants' installations.
func TestSendAsTenantAnswers(t *testing.T) {
	t.Parallel()
	const token = "acme-forge-token-for-tests-only"
	tenants := webhooks.StaticTenants{
		"acme":   {Secrets: []string{"acme's secret for tests only"}, Token: token},
		"globex": {Secrets: []string{"globex's secret for tests only"}, Installation: 7},
	}
	tests := []struct {
		name, tenant string
		handler      func(*bottest.Bot) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error
		// installation made the comment (0: the token); no comment when the
		// delivery is to be dead.
		installation int64
		dead         bool
	}{
		{"Installation", "globex", func(b *bottest.Bot) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
			return triage(b.App)
		}, 7, false},
		{"Token", "acme", func(b *bottest.Bot) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
			return triage(b.App)
		}, 0, false},
		{"Permanent", "globex", func(*bottest.Bot) func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
			return func(context.Context, payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
				return webhooks.Permanent(errors.New("no"))
			}
		}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bot := bottest.New(t, bottest.Options{Tenants: tenants, Forge: forgetest.Options{Token: token}})
			wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(tenants, webhooks.TenantsOptions{})})
			if err != nil {
				t.Fatal(err)
			}
			payloads.OnIssueCommentCreatedEvent(wh, tt.handler(bot))
			bot.Start(wh)
			rec := bot.SendAs(tt.tenant, "issue_comment.created")
			if rec.Tenant != tt.tenant {
				t.Errorf("record's tenant %q, want %q", rec.Tenant, tt.tenant)
			}
			comments := bot.Forge.Comments()
			if tt.dead {
				if rec.Status != delivery.StatusDead || len(rec.Attempts) != 1 || !rec.Final() || rec.LastError() != "no" {
					t.Fatalf("%s after %d attempts (final %v), last error %q; want dead and final after 1 with \"no\" (retries left: %d)",
						rec.Status, len(rec.Attempts), rec.Final(), rec.LastError(), len(bottest.RetryDelays))
				}
				if len(comments) != 0 {
					t.Errorf("comments %+v, want none", comments)
				}
				return
			}
			if rec.Status != delivery.StatusHandled {
				t.Fatalf("%s: %s", rec.Status, rec.LastError())
			}
			if len(comments) != 1 || comments[0].Installation != tt.installation || comments[0].Body != "Labelled for triage." {
				t.Fatalf("comments %+v, want one by installation %d", comments, tt.installation)
			}
			var ops []string
			for _, r := range bot.Forge.Requests() {
				if r.Operation == "issues/add-labels" || r.Operation == "issues/create-comment" {
					ops = append(ops, fmt.Sprintf("%s %d %t", r.Operation, r.Installation, tt.installation == 0 && r.Authorization == "token "+token))
				}
			}
			want := fmt.Sprintf("issues/add-labels %[1]d %[2]t\nissues/create-comment %[1]d %[2]t", tt.installation, tt.installation == 0)
			if got := strings.Join(ops, "\n"); got != want {
				t.Errorf("requests (operation, installation, with the tenant's token):\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// fatalTB is a testing.TB whose Fatal and Fatalf record the message and end
// the goroutine, as a test's do, so that a test can see bottest fail one.
type fatalTB struct {
	testing.TB
	msg chan string
}

func (f fatalTB) Fatal(args ...any) { f.msg <- fmt.Sprint(args...); runtime.Goexit() }
func (f fatalTB) Fatalf(format string, args ...any) {
	f.msg <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Tenants on only one side, the kit's options or the Webhooks, fail Start
// with a message that says what to set, rather than every Send later with
// "secret is required" or a refused signature.
func TestStartTenantsOnOneSide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts bottest.Options
		wh   webhooks.Options
		want string
	}{
		{"Webhooks only", bottest.Options{}, webhooks.Options{Tenants: webhooks.NewTenants(twoTenants, webhooks.TenantsOptions{})}, "bottest.Options.Tenants is unset"},
		{"Options only", bottest.Options{Tenants: twoTenants}, webhooks.Options{Secret: "a secret for tests only"}, "the Webhooks has no tenants"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := fatalTB{TB: t, msg: make(chan string, 1)}
			done := make(chan struct{})
			go func() {
				defer close(done)
				bot := bottest.New(tb, tt.opts)
				wh, err := webhooks.New(tt.wh)
				if err != nil {
					t.Error(err)
					return
				}
				bot.Start(wh)
			}()
			<-done
			select {
			case msg := <-tb.msg:
				if !strings.Contains(msg, tt.want) {
					t.Errorf("Start failed with %q, want it to say %q", msg, tt.want)
				}
			default:
				t.Errorf("Start did not fail; want it to say %q", tt.want)
			}
		})
	}
}
