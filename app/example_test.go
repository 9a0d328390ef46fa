package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// A typed issue_comment.created handler answers as the installation that sent
// the delivery. Here the forge is the fake of package forgetest, on
// 127.0.0.1, so that the handler's API calls can be tested offline.
func ExampleApp_Client() {
	keyPEM, _ := os.ReadFile("testdata/pkcs1.pem") // the app's private key
	key, _ := app.ParsePrivateKey(keyPEM)
	forge, _ := forgetest.Start(forgetest.Options{AppID: "424242", PublicKey: &key.PublicKey})
	defer forge.Close()
	forge.AddInstallation(42)

	forgeApp, err := app.New(app.Options{AppID: "424242", PrivateKey: keyPEM, APIURL: forge.URL})
	if err != nil {
		panic(err)
	}
	wh, _ := webhooks.New(webhooks.Options{Secret: "s3cret"})

	payloads.OnIssueCommentCreatedEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
		c, err := forgeApp.Client(ctx) // as the delivery's installation
		if err != nil {
			return err
		}
		reply, _ := json.Marshal(map[string]string{"body": "Thanks, @" + e.Payload.Sender.Login + "!"})
		res, err := c.Post(e.Payload.Issue.CommentsURL, "application/json", bytes.NewReader(reply))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("replying: %s", res.Status)
		}
		return nil
	})

	// The forge delivers a comment made on an issue of a repository where
	// the app is installed (installation 42).
	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}))
	defer srv.Close()
	body := bytes.ReplaceAll(webhookstest.Payload("issue_comment.created"), []byte("https://api.github.com"), []byte(forge.URL))
	body = append(body[:len(body)-1], `,"installation":{"id":42}}`...)
	sig, _ := signing.Sign("s3cret", body)
	req, _ := http.NewRequest("POST", srv.URL+webhooks.DefaultPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issue_comment")
	req.Header.Set(webhooks.HeaderDelivery, "d-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()

	fmt.Println("delivery answered", res.StatusCode)
	for _, c := range forge.Comments() {
		fmt.Printf("%s/%s#%d, as installation %d: %q\n", c.Owner, c.Repo, c.Issue, c.Installation, c.Body)
	}
	// Output:
	// delivery answered 200
	// Codertocat/Hello-World#1, as installation 42: "Thanks, @Codertocat!"
}

// A tenant's own hook (an organization's, say) sends deliveries that name no
// installation: the tenant says which installation answers for it, and
// Client acts as that one. Options.Tenants is the receiver's own Tenants, so
// that the tenant is read through its cache.
func ExampleApp_Client_tenant() {
	keyPEM, _ := os.ReadFile("testdata/pkcs1.pem")
	key, _ := app.ParsePrivateKey(keyPEM)
	forge, _ := forgetest.Start(forgetest.Options{AppID: "424242", PublicKey: &key.PublicKey})
	defer forge.Close()
	forge.AddInstallation(42)

	tenants := webhooks.NewTenants(webhooks.StaticTenants{
		"acme": {Secrets: []string{"acme-s3cret"}, Installation: 42}, // or Token, and APIURL for its own forge
	}, webhooks.TenantsOptions{})
	wh, _ := webhooks.New(webhooks.Options{Tenants: tenants})
	forgeApp, err := app.New(app.Options{AppID: "424242", PrivateKey: keyPEM, APIURL: forge.URL, Tenants: wh.Tenants()})
	if err != nil {
		panic(err)
	}
	wh.On("issue_comment.created", func(ctx context.Context, e emitter.Event) error {
		c, err := forgeApp.Client(ctx) // the delivery names none: acme's installation
		if err != nil {
			return err
		}
		res, err := c.Post(forge.URL+"/repos/octo/site/issues/1/comments", "application/json", strings.NewReader(`{"body":"Triaged."}`))
		if err != nil {
			return err
		}
		return res.Body.Close()
	})

	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}))
	defer srv.Close()
	body := []byte(`{"action":"created","issue":{"number":1},"comment":{"body":"help"}}`)
	sig, _ := signing.Sign("acme-s3cret", body)
	req, _ := http.NewRequest("POST", srv.URL+"/t/acme/hooks", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issue_comment")
	req.Header.Set(webhooks.HeaderDelivery, "d-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()

	fmt.Println("delivery answered", res.StatusCode)
	for _, c := range forge.Comments() {
		fmt.Printf("%s/%s#%d, as installation %d: %q\n", c.Owner, c.Repo, c.Issue, c.Installation, c.Body)
	}
	// Output:
	// delivery answered 200
	// octo/site#1, as installation 42: "Triaged."
}

// A bot for many customers' organizations: each tenant's hook has its own
// secret and sends deliveries that name no installation, and each tenant
// says how the bot answers it: acme as the app's installation 42, beta (an
// organization that did not install the app) with a token of its own.
// Every handler calls Client the same way; Client picks the tenant's
// credentials (and its API root, had it an APIURL).
func ExampleApp_Client_tenants() {
	keyPEM, _ := os.ReadFile("testdata/pkcs1.pem")
	key, _ := app.ParsePrivateKey(keyPEM)
	const betaToken = "beta-bot-token" // in practice: from the environment or a secret store
	forge, _ := forgetest.Start(forgetest.Options{AppID: "424242", PublicKey: &key.PublicKey, Token: betaToken})
	defer forge.Close()
	forge.AddInstallation(42)

	tenants := webhooks.NewTenants(webhooks.StaticTenants{
		"acme": {Secrets: []string{"acme-s3cret"}, Installation: 42},
		"beta": {Secrets: []string{"beta-s3cret"}, Token: betaToken},
	}, webhooks.TenantsOptions{})
	wh, _ := webhooks.New(webhooks.Options{Tenants: tenants})
	forgeApp, err := app.New(app.Options{AppID: "424242", PrivateKey: keyPEM, APIURL: forge.URL, Tenants: wh.Tenants()})
	if err != nil {
		panic(err)
	}
	wh.On("issue_comment.created", func(ctx context.Context, e emitter.Event) error {
		c, err := forgeApp.Client(ctx) // as the tenant: its installation, else its token
		if err != nil {
			return err // app.ErrNoCredentials is final: no retry
		}
		d, _ := webhooks.DeliveryFrom(ctx)
		res, err := c.Post(forge.URL+"/repos/"+d.Tenant+"/site/issues/1/comments", "application/json", strings.NewReader(`{"body":"Triaged."}`))
		if err != nil {
			return err
		}
		return res.Body.Close()
	})

	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}))
	defer srv.Close()
	body := []byte(`{"action":"created","issue":{"number":1},"comment":{"body":"help"}}`)
	for _, tenant := range []string{"acme", "beta"} {
		sig, _ := signing.Sign(tenant+"-s3cret", body)
		req, _ := http.NewRequest("POST", srv.URL+"/t/"+tenant+"/hooks", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhooks.HeaderEvent, "issue_comment")
		req.Header.Set(webhooks.HeaderDelivery, "d-"+tenant)
		req.Header.Set(webhooks.HeaderSignature, sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
		fmt.Println(tenant, "answered", res.StatusCode)
	}
	for _, c := range forge.Comments() {
		as := fmt.Sprint("installation ", c.Installation)
		if c.Installation == 0 {
			as = "its token"
		}
		fmt.Printf("%s/%s#%d, as %s: %q\n", c.Owner, c.Repo, c.Issue, as, c.Body)
	}
	// Output:
	// acme answered 200
	// beta answered 200
	// acme/site#1, as installation 42: "Triaged."
	// beta/site#1, as its token: "Triaged."
}
