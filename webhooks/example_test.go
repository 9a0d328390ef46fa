package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

func ExampleNew() {
	wh, err := webhooks.New(webhooks.Options{Secret: "mysecret"})
	if err != nil {
		log.Fatal(err)
	}
	sig, _ := wh.Sign([]byte(`{"foo":"bar"}`))
	fmt.Println(sig)

	_, err = webhooks.New(webhooks.Options{})
	fmt.Println(errors.Is(err, webhooks.ErrMissingSecret))
	// Output:
	// sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3
	// true
}

func ExampleWebhooks_On() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "mysecret"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("issues.opened handler, delivery", e.ID)
		return nil
	})
	wh.OnNames([]string{"issues", "push"}, func(ctx context.Context, e emitter.Event) error {
		fmt.Println("issues-or-push handler:", e.Name, e.Action())
		return nil
	})
	// Receive dispatches without checking a signature; VerifyAndReceive checks.
	wh.Receive(context.Background(), emitter.Event{ID: "d1", Name: "issues", Payload: []byte(`{"action":"closed"}`)})
	// Output: issues-or-push handler: issues closed
}

func ExampleWebhooks_VerifyAndReceive() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "new-secret", AdditionalSecrets: []string{"old-secret"}})
	wh.On("push", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("push received:", e.ID)
		return nil
	})
	body := []byte(`{"ref":"refs/heads/main"}`)

	sig, _ := signing.Sign("old-secret", body) // the forge still signs with the old secret
	err := wh.VerifyAndReceive(context.Background(), webhooks.Delivery{ID: "d1", Name: "push", Payload: body, Signature: sig})
	fmt.Println(err)

	err = wh.VerifyAndReceive(context.Background(), webhooks.Delivery{ID: "d2", Name: "push", Payload: body, Signature: "sha256=forged"})
	fmt.Println(errors.Is(err, webhooks.ErrSignatureMismatch), err)
	// Output:
	// push received: d1
	// <nil>
	// true webhooks: delivery "d2" (event "push"): signature does not match event payload and secret
}

func ExampleNewMiddleware() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "mysecret"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		return nil
	})
	wh.On("issues.closed", func(ctx context.Context, e emitter.Event) error {
		// Answered 422 instead of 500, with this message.
		return webhooks.WithStatus(http.StatusUnprocessableEntity, errors.New("closed issues are not accepted"))
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}) // POST /api/forge/webhooks
	srv := httptest.NewServer(mw)                                  // on 127.0.0.1
	defer srv.Close()

	post := func(body string) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/forge/webhooks", strings.NewReader(body))
		sig, _ := wh.Sign([]byte(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forge-Event", "issues")
		req.Header.Set("X-Forge-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		req.Header.Set("X-Hub-Signature-256", sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		fmt.Printf("%d %s\n", res.StatusCode, strings.TrimSpace(string(out)))
	}
	post(`{"action":"opened"}`)
	post(`{"action":"closed"}`)
	post(`[]`)
	// Output:
	// 200 ok
	// 422 {"error":"closed issues are not accepted"}
	// 400 {"error":"payload is not a JSON object (event \"issues\", delivery \"72d3162e-cc78-11e3-81ab-4c9367dc0958\"): it is a JSON array"}
}

// Mounting under a router: AnyPath trusts the router's match (method and
// wildcards included) and ignores MiddlewareOptions.Path.
func ExampleMiddleware_AnyPath() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "a-random-secret-of-32-characters"})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{})
	mux := http.NewServeMux()
	mux.Handle("POST /t/{tenant}/hooks", mw.AnyPath())

	body := `{"zen":"Keep it logically awesome."}`
	sig, _ := wh.Sign([]byte(body))
	r := httptest.NewRequest("POST", "/t/acme/hooks", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, "ping")
	r.Header.Set(webhooks.HeaderDelivery, "d-1")
	r.Header.Set(webhooks.HeaderSignature, sig)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body)
	// Output:
	// 200 ok
}
