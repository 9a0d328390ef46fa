// Command lambda is a forge webhook receiver as an AWS Lambda function, built
// on package forgehooks.dev/forgehooks/lambda, which has the deploy recipe.
// It is configured from its environment:
//
//	FORGE_WEBHOOK_SECRET   the hook's secret (required)
//	FORGE_CATCHUP_HOOK     for scheduled catch-up: "app", "repos/OWNER/REPO/hooks/ID"
//	                       or "orgs/ORG/hooks/ID"; unset: scheduled events fail
//	FORGE_TOKEN            the token catch-up reads a repository or organization hook's log with
//	FORGE_APP_ID           for the app hook: the app's id
//	FORGE_APP_PRIVATE_KEY  for the app hook: the app's PEM private key
//	FORGE_API_URL          the forge's REST API (default catchup.DefaultAPIURL)
//
// Build it with GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o
// bootstrap, for the runtime provided.al2023; give it a function URL as the
// hook's URL, and an EventBridge rule (rate(15 minutes), say) for catch-up.
package main

import (
	"context"
	"log"
	"log/slog"
	"os"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/webhooks"
)

func main() {
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	// The handlers run inside the invocation; an error answers 500, and the
	// delivery is redelivered by the next catch-up.
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
