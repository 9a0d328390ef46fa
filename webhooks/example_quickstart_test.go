package webhooks_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// Example_quickStart is the README's quick start; TestReadmeQuickStart keeps the
// two in step. The README serves on 127.0.0.1:3000; the example serves on a test
// server and posts one delivery to it.
func Example_quickStart() {
	os.Setenv("FORGE_WEBHOOK_SECRET", "mysecret")

	// quickstart:begin
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("issue opened, delivery", e.ID)
		return nil
	})
	wh.OnError(func(ctx context.Context, err *emitter.Error) {
		log.Printf("delivery %s failed: %v", err.Event.ID, err)
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}) // POST /api/forge/webhooks
	// quickstart:end

	srv := httptest.NewServer(mw)
	defer srv.Close()
	body := `{"action":"opened"}`
	sig, _ := wh.Sign([]byte(body))
	req, _ := http.NewRequest("POST", srv.URL+"/api/forge/webhooks", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forge-Event", "issues")
	req.Header.Set("X-Forge-Delivery", "d-42")
	req.Header.Set("X-Hub-Signature-256", sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status)
	// Output:
	// issue opened, delivery d-42
	// 200 OK
}
