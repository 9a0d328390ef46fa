// Package bottest runs a whole bot in a test: the receiver (package
// receiver) with a durable inbox in the test's temporary directory, the fake
// forge of package forgetest, and an app client (package app) wired to it.
// Send delivers an example payload as the app's hook does: its API URLs
// point at the fake forge and it names an installation that exists there.
// SendAs delivers as a tenant's own (repository or organization) hook does:
// signed with the tenant's secret, to its path, and naming no installation.
// Either waits until the inbox has run its handlers:
//
//	bot := bottest.New(t)                // the fake forge, and bot.App for it
//	wh := newBot(bot.App)                // your handlers, replying through the app
//	bot.Start(wh)                        // the receiver with its inbox
//	rec := bot.Send("issue_comment.created")
//	// rec.Status is delivery.StatusHandled; bot.Forge.Comments() has the reply
//
// Everything stops when the test ends, the receiver before its directory is
// removed.
package bottest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// Defaults of a Bot.
const (
	// Installation is the installation a payload without one is sent from;
	// it exists in the fake forge.
	Installation int64 = 1
	// Wait bounds how long Send waits for a delivery to be handled or dead:
	// generous, so that a loaded machine does not fail a test.
	Wait = 2 * time.Minute
)

// RetryDelays are the inbox's waits between attempts when the receiver's
// options give none: two quick retries, so that a failing handler makes a
// dead letter within the test rather than after hours.
var RetryDelays = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}

// AppHook says whether a payload names an app installation, as the app's
// hook's deliveries do and a repository's or organization's own hook's do
// not. Its zero value, AppHookAuto, gives each way of sending its own
// default.
type AppHook uint8

const (
	// AppHookAuto: Send and SendPayload deliver as the app's hook (as
	// AppHookOn), SendAs and SendPayloadAs as a tenant's own hook (as
	// AppHookOff), and Payload leaves the payload's installation as it is.
	AppHookAuto AppHook = iota
	// AppHookOn: every payload names an installation: its own, or
	// Installation when it names none.
	AppHookOn
	// AppHookOff: no payload names an installation; an example's own is
	// removed, as a repository's or organization's hook sends none.
	AppHookOff
)

// Options configure New; every field is optional.
type Options struct {
	// Forge configures the fake forge; its AppID and PublicKey default to
	// forgetest's built-in app (DefaultAppID, PrivateKeyPEM).
	Forge forgetest.Options
	// App configures the app client; AppID, the key and APIURL are set to
	// the fake forge's when empty, and Tenants to Options.Tenants, so that
	// bot.App answers a tenant's delivery as the tenant's installation or
	// token.
	App app.Options
	// Wait bounds Send; zero: Wait.
	Wait time.Duration
	// AppHook says whether Send, SendAs and Payload make payloads name an
	// installation; see AppHook. Zero: AppHookAuto.
	AppHook AppHook
	// Tenants, when set, is where the receiver finds each tenant's secrets,
	// and bot.App each tenant's installation, token and API URL (unless
	// App.Tenants is set); the installations of a webhooks.StaticTenants
	// exist in the fake forge. Start mounts the Webhooks on TenantPath ("/t/{tenant}/hooks") unless
	// its options name another path, and SendAs signs with the tenant's
	// first secret, as Tenants gives it for the tenant's path. Build the
	// Webhooks given to Start with the same source
	// (webhooks.Options{Tenants: webhooks.NewTenants(o.Tenants, …)}).
	Tenants webhooks.SecretSource
	// Tenant is the tenant Send and SendPayload deliver as when Tenants is
	// set; default, with Tenants a webhooks.StaticTenants, its first name in
	// sorted order.
	Tenant string
}

// TenantPath is the path the receiver serves tenants' deliveries on when
// Options.Tenants is set.
const TenantPath = "/t/{" + webhooks.DefaultTenantPathValue + "}/hooks"

// Bot is a fake forge, an app client for it and, once started, a receiver
// running a bot's handlers.
type Bot struct {
	// Forge is the fake forge: its Comments, Tokens and Requests say what the
	// bot did through the API.
	Forge *forgetest.Server
	// App is the app client wired to Forge: give it to the bot's handlers.
	App *app.App
	// Receiver is the running receiver; nil before Start.
	Receiver *receiver.Receiver
	// URL is where deliveries are posted; "" before Start. With
	// Options.Tenants it holds the path's "{tenant}" (see TenantURL).
	URL string

	t     testing.TB
	opts  Options
	wait  time.Duration
	wh    *webhooks.Webhooks
	n     atomic.Int64 // delivery ids
	sends atomic.Int64 // Send's bodies
}

// New starts a fake forge until the test ends (it fails the test if a
// request departed from the forge's REST description), and an app client
// for it. The fake forge holds Installation, and the installation of each
// tenant when Options.Tenants is a webhooks.StaticTenants.
func New(t testing.TB, opts ...Options) *Bot {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	forge := forgetest.New(t, o.Forge)
	forge.AddInstallation(Installation)
	if st, ok := o.Tenants.(webhooks.StaticTenants); ok {
		for _, tn := range st {
			if tn.Installation > 0 {
				forge.AddInstallation(tn.Installation)
			}
		}
	}
	ao := o.App
	if ao.Tenants == nil {
		ao.Tenants = o.Tenants
	}
	if ao.AppID == "" {
		ao.AppID = forge.AppID()
	}
	if ao.Key == nil && ao.PrivateKey == nil && ao.PrivateKeyFile == "" && ao.PrivateKeyEnv == "" {
		ao.PrivateKey = forgetest.PrivateKeyPEM()
	}
	if ao.APIURL == "" {
		ao.APIURL = forge.URL
	}
	a, err := app.New(ao)
	if err != nil {
		t.Fatalf("bottest: %v", err)
	}
	return &Bot{Forge: forge, App: a, t: t, opts: o, wait: cmpOr(o.Wait, Wait)}
}

// Start runs a receiver with wh's handlers and a durable inbox in the test's
// temporary directory, on 127.0.0.1, until the test ends.
func (b *Bot) Start(wh *webhooks.Webhooks) *receiver.Receiver {
	b.t.Helper()
	return b.StartReceiver(receiver.Options{Webhooks: wh})
}

// StartReceiver runs a receiver with o until the test ends. Its Addr is
// 127.0.0.1 on a free port; without an Inbox (or one with neither Dir nor
// URLs) it gets one in the test's temporary directory, and without
// RetryDelays the inbox retries after RetryDelays. With Options.Tenants and
// no Middleware.Path, the path is TenantPath. It fails the test when
// Options.Tenants is set and the Webhooks has no tenants, or the other way
// round. When the test ends, the
// receiver drains and stops before the directory is removed.
func (b *Bot) StartReceiver(o receiver.Options) *receiver.Receiver {
	b.t.Helper()
	if b.Receiver != nil {
		b.t.Fatal("bottest: the receiver is started already")
	}
	if o.Webhooks == nil {
		b.t.Fatal("bottest: no Webhooks")
	}
	// Tenants on one side only would fail every Send later, and obscurely:
	// the Webhooks has no secret to sign with, or refuses the tenant's.
	switch withTenants := o.Webhooks.Tenants() != nil; {
	case withTenants && b.opts.Tenants == nil:
		b.t.Fatal("bottest: the Webhooks has tenants (webhooks.Options.Tenants) and bottest.Options.Tenants is unset: give bottest.New the same source, so that Send signs as a tenant and bot.App answers as one")
	case !withTenants && b.opts.Tenants != nil:
		b.t.Fatal("bottest: bottest.Options.Tenants is set and the Webhooks has no tenants: build it with webhooks.Options{Tenants: webhooks.NewTenants(source, …)} from the same source")
	}
	in := inbox.Options{}
	if o.Inbox != nil {
		in = *o.Inbox
	}
	if in.Dir == "" && len(in.URLs) == 0 {
		in.Dir = b.t.TempDir() // before the cleanup below, so removed after it
	}
	if in.RetryDelays == nil {
		in.RetryDelays = RetryDelays
	}
	o.Inbox = &in
	o.Addr = "127.0.0.1:0"
	if b.opts.Tenants != nil && o.Middleware.Path == "" {
		o.Middleware.Path = TenantPath
	}
	listening := make(chan string, 4)
	onListen := o.OnListen
	o.OnListen = func(part, addr string) {
		if onListen != nil {
			onListen(part, addr)
		}
		if part == "webhooks" {
			listening <- addr
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := receiver.New(ctx, o)
	if err != nil {
		cancel()
		b.t.Fatalf("bottest: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.t.Errorf("bottest: the receiver stopped with: %v", err)
		}
	})
	select {
	case addr := <-listening:
		path := o.Middleware.Path
		if path == "" {
			path = webhooks.DefaultPath
		}
		b.URL = "http://" + addr + path
	case err := <-done:
		b.t.Fatalf("bottest: the receiver stopped: %v", err)
	case <-time.After(b.wait):
		b.t.Fatalf("bottest: the receiver did not listen within %v", b.wait)
	}
	b.Receiver, b.wh = r, o.Webhooks
	return r
}

// Send delivers an example payload of name ("issue_comment.created", "push":
// see webhookstest.Payload) as the app's hook does, with a fresh delivery id,
// and returns its record once its handlers succeeded or it became a dead
// letter. Before sending, the payload's API URLs point at the fake forge and
// it names an installation that exists there (unless Options.AppHook is
// AppHookOff; see Payload), and each Send ends the body with whitespace of
// its own, so that the inbox's replay guard (the same body under another
// delivery id is refused) lets the same example be sent again. With
// Options.Tenants, it is sent as Options.Tenant.
func (b *Bot) Send(name string) delivery.Record {
	b.t.Helper()
	event, _, _ := strings.Cut(name, ".")
	return b.SendPayload(event, b.example(name, AppHookOn))
}

// SendAs delivers an example payload of name as tenant's own hook does:
// signed with the tenant's first secret (as Options.Tenants gives it for the
// tenant's path), posted to the tenant's path, and naming no installation
// (unless Options.AppHook is AppHookOn), its API URLs pointing at the fake
// forge. It returns the record once the handlers succeeded or it became a
// dead letter; its Tenant is the tenant's name. It fails the test without
// Options.Tenants.
func (b *Bot) SendAs(tenant, name string) delivery.Record {
	b.t.Helper()
	event, _, _ := strings.Cut(name, ".")
	return b.SendPayloadAs(tenant, event, b.example(name, AppHookOff))
}

// example is the example payload of name, made ready by payload with def
// standing for AppHookAuto, and followed by whitespace of its own.
func (b *Bot) example(name string, def AppHook) []byte {
	b.t.Helper()
	p := b.payload(webhookstest.Payload(name), def)
	return append(p, bytes.Repeat([]byte{'\n'}, int(b.sends.Add(1)))...)
}

// SendPayload delivers payload as event (the X-Forge-Event header) with a
// fresh delivery id, signed with the Webhooks' secret, as the forge does, and
// returns its record once its handlers succeeded or it became a dead letter.
// The payload is sent as given (see Payload). It fails the test when the
// receiver does not answer 202 (stored: a 200 says the inbox refused it as a
// duplicate or a replay of a body it holds), or the delivery is neither
// handled nor dead within the bound. With Options.Tenants, it is
// SendPayloadAs for Options.Tenant.
func (b *Bot) SendPayload(event string, payload []byte) delivery.Record {
	b.t.Helper()
	if b.opts.Tenants != nil {
		return b.SendPayloadAs(b.defaultTenant(), event, payload)
	}
	if b.Receiver == nil {
		b.t.Fatal("bottest: Send before Start")
	}
	sig, err := b.wh.Sign(payload)
	if err != nil {
		b.t.Fatalf("bottest: signing: %v", err)
	}
	return b.post(b.URL, "", event, payload, sig)
}

// SendPayloadAs is SendPayload for tenant: signed with the tenant's first
// secret and posted to the tenant's path (TenantURL). It fails the test
// without Options.Tenants, or when they know no such tenant.
func (b *Bot) SendPayloadAs(tenant, event string, payload []byte) delivery.Record {
	b.t.Helper()
	if b.Receiver == nil {
		b.t.Fatal("bottest: Send before Start")
	}
	if b.opts.Tenants == nil {
		b.t.Fatal("bottest: SendAs without Options.Tenants")
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.wait)
	defer cancel()
	tn, err := b.opts.Tenants.Lookup(ctx, webhooks.TenantKey{Path: tenant})
	if err != nil {
		b.t.Fatalf("bottest: tenant %q: %v", tenant, err)
	}
	if len(tn.Secrets) == 0 {
		b.t.Fatalf("bottest: tenant %q has no secret", tenant)
	}
	sig, err := signing.Sign(tn.Secrets[0], payload)
	if err != nil {
		b.t.Fatalf("bottest: signing as tenant %q: %v", tenant, err)
	}
	return b.post(b.TenantURL(tenant), tenant, event, payload, sig)
}

// TenantURL returns the URL tenant's deliveries are posted to: URL with the
// tenant's name for the path's "{tenant}".
func (b *Bot) TenantURL(tenant string) string {
	return strings.Replace(b.URL, "{"+webhooks.DefaultTenantPathValue+"}", url.PathEscape(tenant), 1)
}

// defaultTenant is Options.Tenant, or the first name of a StaticTenants.
func (b *Bot) defaultTenant() string {
	b.t.Helper()
	if b.opts.Tenant != "" {
		return b.opts.Tenant
	}
	if st, ok := b.opts.Tenants.(webhooks.StaticTenants); ok && len(st) > 0 {
		return slices.Sorted(maps.Keys(st))[0]
	}
	b.t.Fatal("bottest: Send with Options.Tenants needs Options.Tenant (or use SendAs)")
	return ""
}

// post sends one signed delivery to u, for tenant (or none), and waits for
// its record.
func (b *Bot) post(u, tenant, event string, payload []byte, sig string) delivery.Record {
	b.t.Helper()
	id := fmt.Sprintf("bottest-%d-%d", time.Now().UnixNano(), b.n.Add(1))
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "forge-hookshot/bottest")
	req.Header.Set(webhooks.HeaderEvent, event)
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := (&http.Client{Timeout: b.wait}).Do(req)
	if err != nil {
		b.t.Fatalf("bottest: delivering %s: %v", event, err)
	}
	var answer bytes.Buffer
	answer.ReadFrom(res.Body)
	res.Body.Close()
	switch {
	case res.StatusCode == http.StatusOK:
		b.t.Fatalf("bottest: delivery %s (%s) answered 200 %s: not stored (the inbox holds this body under another delivery id already: a replay)", id, event, strings.TrimSpace(answer.String()))
	case res.StatusCode != http.StatusAccepted:
		b.t.Fatalf("bottest: delivery %s (%s) to %s answered %d: %s", id, event, u, res.StatusCode, strings.TrimSpace(answer.String()))
	}
	if tenant != "" {
		return b.Wait(tenant + "/" + id) // the inbox keeps a tenant's deliveries apart
	}
	return b.Wait(id)
}

// Wait returns the record of delivery id ("tenant/id" for a tenant's, as
// the inbox keys them) once its handlers succeeded or it became a dead
// letter; it fails the test when neither happens within the bound.
func (b *Bot) Wait(id string) delivery.Record {
	b.t.Helper()
	store := b.Receiver.Store()
	changed := make(chan struct{}, 1)
	stop := store.Watch(func(rec delivery.Record) {
		if rec.ID == id || rec.Tenant+"/"+rec.ID == id {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	deadline := time.After(b.wait)
	tick := time.NewTicker(100 * time.Millisecond) // also without a watch event
	defer tick.Stop()
	var last delivery.Record
	for {
		rec, err := store.Get(context.Background(), id)
		if err == nil {
			last = rec
			if rec.Status == delivery.StatusHandled || rec.Status == delivery.StatusDead {
				return rec
			}
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline:
			b.t.Fatalf("bottest: delivery %s neither handled nor dead after %v (status %q, last error %q)", id, b.wait, last.Status, last.LastError())
			return last
		}
	}
}

// Payload returns payload with its API URLs (https://api.github.com, as the
// forge's public examples have them) pointing at the fake forge, and the
// installation it names added to the fake forge. It adds no installation
// unless asked: with Options.AppHook AppHookOn, a payload that names none
// gets Installation; with AppHookOff, an installation it names is removed;
// with AppHookAuto (the zero value), it is left as it is. (Send and SendAs
// ask for the installation their kind of hook sends; see AppHook.)
func (b *Bot) Payload(payload []byte) []byte {
	b.t.Helper()
	return b.payload(payload, AppHookAuto)
}

// payload is Payload with def for AppHookAuto.
func (b *Bot) payload(payload []byte, def AppHook) []byte {
	b.t.Helper()
	mode := b.opts.AppHook
	if mode == AppHookAuto {
		mode = def
	}
	p := bytes.ReplaceAll(payload, []byte(app.DefaultAPIURL), []byte(b.Forge.URL))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		b.t.Fatalf("bottest: the payload is not a JSON object: %v", err)
	}
	var in struct {
		ID int64 `json:"id"`
	}
	raw, named := m["installation"]
	named = named && json.Unmarshal(raw, &in) == nil && in.ID != 0
	switch {
	case mode == AppHookOff && named:
		delete(m, "installation")
	case named:
		b.Forge.AddInstallation(in.ID)
		return p
	case mode == AppHookOn:
		m["installation"] = json.RawMessage(fmt.Sprintf(`{"id":%d}`, Installation))
	default:
		return p
	}
	out, err := json.Marshal(m)
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
