package receiver_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/webhooks"
)

// A worker with no HTTP endpoint runs what an ingest stored. Here both use
// one embedded inbox in turn; a fleet shares a NATS cluster (inbox.Options
// URLs) with receivers made with Options.IngestOnly.
func ExampleRunWorker() {
	dir, _ := os.MkdirTemp("", "worker-example")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)

	// The ingest: an inbox opened and never started stores, running nothing.
	in, _ := inbox.Open(context.Background(), inbox.Options{Dir: dir, Logger: quiet})
	in.Enqueue(context.Background(), webhooks.Delivery{ID: "d-1", Name: "issues", Payload: []byte(`{"action":"opened"}`)})
	in.Close(context.Background())

	// The worker.
	ctx, cancel := context.WithCancel(context.Background())
	wh, _ := webhooks.New(webhooks.Options{Secret: "example-secret-0123456789"}) // the secret is not used
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		fmt.Println("ran", e.ID, e.Name)
		cancel() // the example is done: RunWorker drains and returns
		return nil
	})
	err := receiver.RunWorker(ctx, receiver.WorkerOptions{Inbox: inbox.Options{Dir: dir}, Receiver: wh, Logger: quiet})
	fmt.Println("drained:", err)
	// Output:
	// ran d-1 issues
	// drained: <nil>
}
