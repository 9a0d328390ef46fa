package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// In a function (AWS Lambda, Cloud Functions) the answer waits for the
// handlers and the error handlers, and a failure is a 5xx that the forge's
// log keeps.
func ExampleMiddlewareOptions_inline() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "example-secret-0123456789"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		return errors.New("the database is down")
	})
	wh.OnError(func(ctx context.Context, err *emitter.Error) {
		fmt.Println("told before the answer:", err.Errors[0])
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inline: true})

	body := `{"action":"opened"}`
	sig, _ := wh.Sign([]byte(body))
	r := httptest.NewRequest(http.MethodPost, webhooks.DefaultPath, strings.NewReader(body))
	r.Header = http.Header{"Content-Type": {"application/json"}, "X-Forge-Event": {"issues"}, "X-Forge-Delivery": {"d-1"}, "X-Hub-Signature-256": {sig}}
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, r)
	fmt.Println("answered", rec.Code)
	// Output:
	// told before the answer: the database is down
	// answered 500
}
