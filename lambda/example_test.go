package lambda_test

import (
	"context"
	"log"
	"log/slog"
	"os"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/webhooks"
)

// A function's main: the secret from the environment, one handler, catch-up
// when FORGE_CATCHUP_HOOK is set, then Start, which serves invocations until
// Lambda ends the instance.
func Example() {
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		slog.InfoContext(ctx, "issue opened", "delivery", e.ID)
		return nil
	})
	co, err := lambda.CatchupFromEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	lambda.New(wh, lambda.Options{Catchup: co}).Start()
}

// Many tenants behind one function URL, each posting to its own path
// (https://ID.lambda-url.REGION.on.aws/t/acme/hooks), each with its own
// secret.
func ExampleOptions_tenants() {
	tenants := webhooks.StaticTenants{
		"acme":   {Secrets: []string{os.Getenv("ACME_WEBHOOK_SECRET")}},
		"globex": {Secrets: []string{os.Getenv("GLOBEX_WEBHOOK_SECRET")}},
	}
	wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(tenants, webhooks.TenantsOptions{})})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		d, _ := webhooks.DeliveryFrom(ctx)
		slog.InfoContext(ctx, "issue opened", "tenant", d.Tenant, "delivery", e.ID)
		return nil
	})
	lambda.New(wh, lambda.Options{Middleware: webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}}).Start()
}
