package webhooks_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// Example_quickStart is the README's quick start; TestReadmeQuickStart keeps the
// two in step. Where the README listens on 127.0.0.1:3000 and waits for SIGINT
// or SIGTERM (readmeServe), the example listens on a free port and posts one
// delivery.
func Example_quickStart() {
	os.Setenv("FORGE_WEBHOOK_SECRET", "a-random-secret-of-32-characters")

	// quickstart:begin
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		fmt.Printf("issue opened, delivery %q\n", e.ID)
		return nil
	})
	wh.OnError(func(ctx context.Context, err *emitter.Error) {
		// %.64q: the id of a forged delivery is whatever its sender chose.
		log.Printf("delivery %.64q failed: %v", err.Event.ID, err)
	})
	srv := &http.Server{
		Addr:              "127.0.0.1:3000",
		Handler:           webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}), // POST /api/forge/webhooks
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	// quickstart:serve
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	post(wh, "http://"+ln.Addr().String()+webhooks.DefaultPath)
	// quickstart:shutdown
	// Answer the requests in progress, then wait for handlers still running
	// (those answered 202); Close logs the id of any delivery it gives up on.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Print(err)
	}
	if err := wh.Close(ctx); err != nil {
		log.Print(err)
	}
	// quickstart:end
	fmt.Println("shut down")
	// Output:
	// issue opened, delivery "d-42"
	// 200 OK
	// shut down
}

// post sends one signed "issues.opened" delivery to url and prints the status.
func post(wh *webhooks.Webhooks, url string) {
	body := `{"action":"opened"}`
	sig, _ := wh.Sign([]byte(body))
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
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
}
