package webhookstest_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

// A test of an application's own handler: a signed issues.opened delivery
// with every header the forge sends, delivered to the application's
// middleware. In a real test, t is the test's *testing.T.
func ExampleNewRequest() {
	t := &testing.T{}
	wh, _ := webhooks.New(webhooks.Options{Secret: "test-secret"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		d, _ := webhooks.DeliveryFrom(ctx)
		fmt.Println("handled", e.Name+"."+e.Action(), "from hook", d.Header.Get(webhookstest.HeaderHookID))
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{})

	req := webhookstest.NewRequest(t, "test-secret", "issues", webhookstest.Payload("issues.opened"))
	rec := webhookstest.Deliver(t, mw, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// handled issues.opened from hook 424242
	// 200 ok
}

// Options change the request: here a middleware mounted on another path, and
// a delivery sent twice with the same id.
func ExampleWithPath() {
	t := &testing.T{}
	wh, _ := webhooks.New(webhooks.Options{Secret: "test-secret"})
	wh.On("ping", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("ping", e.ID)
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/hooks/forge"})

	for range 2 {
		req := webhookstest.NewRequest(t, "test-secret", "ping", webhookstest.Payload("ping"),
			webhookstest.WithPath("/hooks/forge"), webhookstest.WithDeliveryID("d-1"))
		webhookstest.Deliver(t, mw, req)
	}
	// Output:
	// ping d-1
	// ping d-1
}

// WithHeader spoils a request, to test what the receiver answers.
func ExampleWithHeader() {
	t := &testing.T{}
	wh, _ := webhooks.New(webhooks.Options{Secret: "test-secret"})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{})

	req := webhookstest.NewRequest(t, "test-secret", "push", webhookstest.Payload("push"),
		webhookstest.WithHeader(webhooks.HeaderSignature, "sha256=0000"))
	rec := webhookstest.Deliver(t, mw, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 400 {"error":"signature does not match event payload and secret"}
}

func ExamplePayloads() {
	for _, name := range []string{"push", "issues.opened", "sub_issues.sub_issue_added"} {
		fmt.Println(name, len(webhookstest.Payloads(name)))
	}
	// Output:
	// push 7
	// issues.opened 4
	// sub_issues.sub_issue_added 1
}

func ExampleSign() {
	t := &testing.T{}
	fmt.Println(webhookstest.Sign(t, "mysecret", []byte(`{"foo":"bar"}`)))
	// Output: sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3
}

// The installation target headers name the payload's repository.
func ExamplePayload() {
	t := &testing.T{}
	req := webhookstest.NewRequest(t, "test-secret", "push", webhookstest.Payload("push"))
	fmt.Println(req.Method, req.URL.Path, req.Header.Get("Content-Type"))
	fmt.Println(req.Header.Get(webhookstest.HeaderTargetType))
	fmt.Println(http.StatusText(webhookstest.Deliver(t, http.NotFoundHandler(), req).Code))
	// Output:
	// POST /api/forge/webhooks application/json
	// repository
	// Not Found
}
