// Package forgefunction is a forge webhook receiver as a Google Cloud
// Function (functions-framework-go): the HTTP function "ForgeWebhook" verifies
// each delivery and runs its handlers inside the request, since a function
// gets no CPU once it has answered. Deploy with
//
//	gcloud functions deploy forge-webhook --gen2 --runtime=goNNN --trigger-http \
//	  --allow-unauthenticated --entry-point=ForgeWebhook \
//	  --set-secrets=FORGE_WEBHOOK_SECRET=forge-webhook-secret:latest
//
// (goNNN: a Go runtime no older than this module's go line) and give its URL
// to the forge. cmd/ runs it locally.
package forgefunction

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

func init() {
	functions.HTTP("ForgeWebhook", ForgeWebhook)
}

// register adds the handlers. They run before the answer; an error answers
// 500, which the forge's delivery log shows, and catch-up redelivers.
var register = func(wh *webhooks.Webhooks) {
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		slog.InfoContext(ctx, "issue opened", "delivery", e.ID)
		return nil
	})
}

// handler is built at the first request, from the environment the platform
// gives the instance.
var handler = sync.OnceValues(func() (http.Handler, error) {
	wh, err := webhooks.New(webhooks.Options{Secret: getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		return nil, err
	}
	register(wh)
	// Inline: the answer waits for the handlers (and error handlers), and
	// nothing of the delivery runs after it. The function's URL is the
	// whole route, so any path is a delivery.
	return webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inline: true}).AnyPath(), nil
})

// ForgeWebhook is the HTTP function.
func ForgeWebhook(w http.ResponseWriter, r *http.Request) {
	h, err := handler()
	if err != nil {
		slog.Error("forge webhook function is not configured", "error", err)
		http.Error(w, "not configured", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}
