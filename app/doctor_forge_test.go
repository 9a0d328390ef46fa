package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

// An app subscribed to issues, without the checks permission: of the names
// its handlers are registered for, issues.opened can arrive and
// check_run.completed never can; CheckSubscriptions reads that from GET /app
// over HTTP, as the app.
func TestCheckSubscriptions(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(t, forgetest.Options{App: forgetest.AppInfo{
		Events:      []string{"issues"},
		Permissions: map[string]string{"issues": "write", "metadata": "read"},
	}})
	a, err := app.New(app.Options{AppID: forge.AppID(), PrivateKey: forgetest.PrivateKeyPEM(), APIURL: forge.URL})
	if err != nil {
		t.Fatal(err)
	}
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for tests only"})
	h := func(context.Context, emitter.Event) error { return nil }
	wh.On("issues.opened", h)
	wh.On("check_run.completed", h)
	findings, err := a.CheckSubscriptions(t.Context(), wh.Names())
	if err != nil {
		t.Fatal(err)
	}
	var cannot []app.Finding
	for _, f := range findings {
		if !f.CanArrive {
			cannot = append(cannot, f)
		}
	}
	if len(findings) != 2 || len(cannot) != 1 || cannot[0].Name != "check_run.completed" ||
		!strings.Contains(cannot[0].Problem, "checks permission") || !strings.Contains(cannot[0].Problem, "not subscribed") {
		t.Fatalf("findings %+v", findings)
	}
	reqs := forge.Requests()
	if len(reqs) != 1 || reqs[0].Operation != "apps/get-authenticated" || !strings.HasPrefix(reqs[0].Authorization, "Bearer ") {
		t.Errorf("requests %+v, want one GET /app as the app", reqs)
	}
}

// CheckSubscriptions fails, saying so, when the forge refuses the app.
func TestCheckSubscriptionsRefused(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(t, forgetest.Options{AppID: "999"})
	a, _ := app.New(app.Options{AppID: "1", PrivateKey: forgetest.PrivateKeyPEM(), APIURL: forge.URL})
	_, err := a.CheckSubscriptions(t.Context(), []string{"push"})
	if err == nil || !strings.Contains(err.Error(), "GET /app") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("error %v, want the 401 of GET /app", err)
	}
}

// Before deploying, check that the forge will send the app what its handlers
// wait for: here the app is subscribed to issues only.
func ExampleApp_CheckSubscriptions() {
	forge, _ := forgetest.Start(forgetest.Options{App: forgetest.AppInfo{
		Events: []string{"issues"}, Permissions: map[string]string{"issues": "write"},
	}})
	defer forge.Close()
	a, _ := app.New(app.Options{AppID: forge.AppID(), PrivateKey: forgetest.PrivateKeyPEM(), APIURL: forge.URL})

	wh, _ := webhooks.New(webhooks.Options{Secret: "s3cret"})
	wh.On("issues.opened", func(context.Context, emitter.Event) error { return nil })
	wh.On("check_run.completed", func(context.Context, emitter.Event) error { return nil })

	findings, err := a.CheckSubscriptions(context.Background(), wh.Names())
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	// Output:
	// NO  check_run.completed: the app lacks the checks permission the forge requires to send check_run; the app is not subscribed to the check_run event (the app's settings: Permissions & events)
	// ok  issues.opened (issues: write)
}
