// Command rawonly is a program that uses raw handlers only: TestDependencies
// checks that building it compiles no file of package payloads.
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

func main() {
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("push", func(ctx context.Context, e emitter.Event) error {
		log.Printf("push %q: %d bytes", e.ID, len(e.Payload))
		return nil
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:3000", webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{})))
}
