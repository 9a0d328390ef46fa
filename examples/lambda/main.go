// Command lambda is a forge webhook receiver as an AWS Lambda function (see
// Function), configured from its environment:
//
//	FORGE_WEBHOOK_SECRET  the hook's secret (required)
//	FORGE_CATCHUP_HOOK    for scheduled catch-up: "app", "repos/OWNER/REPO/hooks/ID"
//	                      or "orgs/ORG/hooks/ID"; unset: scheduled events fail
//	FORGE_TOKEN           the token catch-up reads a repository or organization hook's log with
//	FORGE_API_URL         the forge's REST API (default catchup.DefaultAPIURL)
//
// Give it a function URL (or an HTTP API, or a load balancer) as the hook's
// URL, and an EventBridge rule (rate(15 minutes), say) for catch-up.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

func main() {
	fn, err := functionFromEnv(os.Getenv, register)
	if err != nil {
		log.Fatal(err)
	}
	mainWith(fn)
}

// mainWith serves Lambda invocations with fn until the runtime API goes away.
func mainWith(fn *Function) { lambda.Start(fn.Invoke) }

// register adds the function's handlers. They run inside the invocation; an
// error answers 500, and the delivery is redelivered by the next catch-up.
func register(wh *webhooks.Webhooks) {
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		slog.InfoContext(ctx, "issue opened", "delivery", e.ID)
		return nil
	})
}

// functionFromEnv builds the Function from the environment, with the handlers
// that register adds.
func functionFromEnv(getenv func(string) string, register func(*webhooks.Webhooks)) (*Function, error) {
	wh, err := webhooks.New(webhooks.Options{Secret: getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		return nil, err
	}
	register(wh)
	var co *catchup.Options
	if spec := getenv("FORGE_CATCHUP_HOOK"); spec != "" {
		hook, err := parseHook(spec)
		if err != nil {
			return nil, err
		}
		co = &catchup.Options{APIURL: getenv("FORGE_API_URL"), Hook: hook, Credentials: catchup.Token(getenv("FORGE_TOKEN"))}
	}
	return NewFunction(wh, co), nil
}

// parseHook reads "app", "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID".
func parseHook(s string) (catchup.Hook, error) {
	p := strings.Split(s, "/")
	switch {
	case s == "app":
		return catchup.AppHook(), nil
	case len(p) == 5 && p[0] == "repos" && p[3] == "hooks":
		if id, err := strconv.ParseInt(p[4], 10, 64); err == nil {
			return catchup.RepoHook(p[1], p[2], id), nil
		}
	case len(p) == 4 && p[0] == "orgs" && p[2] == "hooks":
		if id, err := strconv.ParseInt(p[3], 10, 64); err == nil {
			return catchup.OrgHook(p[1], id), nil
		}
	}
	return catchup.Hook{}, fmt.Errorf("FORGE_CATCHUP_HOOK %q: %w", s, errors.New(`want "app", "repos/OWNER/REPO/hooks/ID" or "orgs/ORG/hooks/ID"`))
}
