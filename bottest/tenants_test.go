package bottest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/bottest"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
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
// names none) makes a dead letter whose error says so.
func TestSendAsNoInstallation(t *testing.T) {
	t.Parallel()
	bot := bottest.New(t, bottest.Options{Tenants: twoTenants})
	wh, _ := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(twoTenants, webhooks.TenantsOptions{})})
	payloads.OnIssueCommentCreatedEvent(wh, triage(bot.App))
	bot.Start(wh)
	rec := bot.SendAs("acme", "issue_comment.created")
	if rec.Status != delivery.StatusDead || !strings.Contains(rec.LastError(), "installation") {
		t.Fatalf("%s: %q; want dead for want of an installation", rec.Status, rec.LastError())
	}
	if c := bot.Forge.Comments(); len(c) != 0 {
		t.Errorf("comments %+v", c)
	}
}
