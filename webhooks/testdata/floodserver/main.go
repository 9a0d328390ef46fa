// Command floodserver is the quick start's receiver (default options), which
// TestHostileBounds runs in a process of its own and attacks, so that the
// peak memory it measures is the receiver's alone. It prints "listening on
// ADDR" once it serves, and logs as the quick start does, to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

func main() {
	slowOnError := flag.Duration("slow-onerror", 0, "how long each error handler takes")
	flag.Parse()
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error { return nil })
	wh.OnError(func(ctx context.Context, err *emitter.Error) {
		time.Sleep(*slowOnError)
		log.Printf("delivery %.64q failed: %v", err.Event.ID, err)
	})
	srv := &http.Server{
		Handler:           webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	go srv.Serve(ln)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	wh.Close(ctx)
}
