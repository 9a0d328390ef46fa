package inbox_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/webhooks"
)

// An inbox in a directory runs the Webhooks' handlers for each stored
// delivery; the middleware answers 202 once a delivery is stored.
func Example() {
	dir, _ := os.MkdirTemp("", "inbox-example")
	defer os.RemoveAll(dir)

	wh, err := webhooks.New(webhooks.Options{Secret: "example-secret"})
	if err != nil {
		log.Fatal(err)
	}
	handled := make(chan string, 1)
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		handled <- fmt.Sprintf("handled %s (%s), attempt %d", info.ID, info.Name, info.Attempt)
		return nil
	})
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: dir, Receiver: wh, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	// The workers run the stored deliveries from now on.
	if err := in.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Serve this middleware: it verifies each delivery and stores it.
	_ = webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in})

	// What the middleware does with a verified delivery:
	d := webhooks.Delivery{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Name: "issues", Payload: []byte(`{"action":"opened"}`)}
	res, err := in.Enqueue(context.Background(), d)
	fmt.Println(res, err)
	fmt.Println(<-handled)
	res, _ = in.Enqueue(context.Background(), d)
	fmt.Println("sent again:", res)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		r, err := in.Get(ctx, d.ID)
		if err == nil && r.Status == delivery.StatusHandled {
			fmt.Println(r.PayloadName(), r.Status, "after", len(r.Attempts), "attempt")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	in.Close(ctx)
	wh.Close(ctx)
	// Output:
	// enqueued <nil>
	// handled 72d3162e-cc78-11e3-81ab-4c9367dc0958 (issues), attempt 1
	// sent again: duplicate
	// issues.opened handled after 1 attempt
}

// The inbox answers from its own state, for the duplicate window: the same
// delivery again is a duplicate, its body under another id a possible
// replay; Counters counts them, for a metrics exporter.
func ExampleInbox_Enqueue() {
	dir, _ := os.MkdirTemp("", "inbox-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	in, err := inbox.Open(ctx, inbox.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler),
		DuplicateWindow: 7 * 24 * time.Hour, // a self-hosted forge keeps its log up to 7 days
		MaxStoreBytes:   200 << 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close(ctx)
	body := []byte(`{"action":"opened","issue":{"number":7}}`)
	for _, id := range []string{"d-1", "d-1", "d-2"} {
		res, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: body})
		fmt.Println(id, res, err)
	}
	fmt.Printf("%+v\n", in.Counters())
	// Output:
	// d-1 enqueued <nil>
	// d-1 duplicate <nil>
	// d-2 duplicate <nil>
	// {Duplicates:1 Requeued:0 Replays:1 IDReuses:0 Unsealed:0 BadSeals:0 NotDeliveries:0}
}
