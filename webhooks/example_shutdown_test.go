package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// A graceful shutdown: http.Server.Shutdown lets requests in progress get their
// answers, then Close waits for handlers that outlived their request's 202. A
// delivery the forge was told "still processing" is not lost.
func ExampleWebhooks_Close() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "mysecret"})
	answered := make(chan struct{})
	wh.On("push", func(ctx context.Context, e emitter.Event) error {
		<-answered // still at work when the middleware answers
		fmt.Println("handler finished")
		return nil
	})
	srv := &http.Server{
		Handler: webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{
			Timeout:     time.Millisecond, // 202 at once, for the example
			MaxInFlight: 100,              // at most 100 deliveries with handlers running
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	body := `{"ref":"refs/heads/main"}`
	sig, _ := signing.Sign("mysecret", []byte(body))
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+webhooks.DefaultPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "push")
	req.Header.Set(webhooks.HeaderDelivery, "d-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status)
	close(answered)

	// On SIGTERM, say:
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := errors.Join(srv.Shutdown(ctx), wh.Close(ctx)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("shut down")
	// Output:
	// 202 Accepted
	// handler finished
	// shut down
}
