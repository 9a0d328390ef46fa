package main

import (
	"context"
	"fmt"

	"forgehooks.dev/forgehooks/app"
)

func cmdDoctor(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "doctor", "forgehooks doctor --app-id ID --private-key FILE [--api-url URL] NAME...", `
Check that the forge will send the app the deliveries its handlers wait for.
Reads the app's subscriptions and permissions (GET /app, as the app) and
prints, for each NAME ("issues.opened", "push": the names handlers are
registered for, as webhooks.Webhooks.Names lists them), "ok" or "NO" and why:
the forge sends an event to an app only when the app is subscribed to it and
holds a permission that lets it see it (check_run needs checks).
Exits 1 when any NAME can never arrive, or the app's settings cannot be read.`)
	appID := fs.String("app-id", "", "the app's id (required)")
	keyFile := fs.String("private-key", "", "PEM file of the app's private key, PKCS#1 or PKCS#8 (required)")
	apiURL := fs.String("api-url", app.DefaultAPIURL, "the forge's REST API base URL (a self-hosted forge's ends in /api/v3)")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	switch {
	case *appID == "" || *keyFile == "":
		return fs.usageError("--app-id and --private-key are required")
	case len(pos) == 0:
		return fs.usageError("give the names to check: NAME... (\"issues.opened\", \"push\")")
	}
	a, err := app.New(app.Options{AppID: *appID, PrivateKeyFile: *keyFile, APIURL: *apiURL})
	if err != nil {
		return fs.fail("%v", err)
	}
	findings, err := a.CheckSubscriptions(ctx, pos)
	if err != nil {
		return fs.fail("%v", err)
	}
	never := 0
	for _, f := range findings {
		fmt.Fprintln(c.stdout, f)
		if !f.CanArrive {
			never++
		}
	}
	if never > 0 {
		fmt.Fprintf(c.stderr, "forgehooks doctor: %d of %d names can never arrive\n", never, len(findings))
		return exitFailure
	}
	return exitOK
}
