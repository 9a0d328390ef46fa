package inbox_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/webhooks"
)

// With OrderBy, the deliveries about one pull request run one at a time, in
// the order they were stored, even when the first one fails and is retried.
func ExampleOptions_orderBy() {
	dir, _ := os.MkdirTemp("", "inbox-order-example")
	defer os.RemoveAll(dir)

	wh, err := webhooks.New(webhooks.Options{Secret: "example-secret"})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	failed := false
	wh.On("pull_request", func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		if e.ID == "1" && !failed {
			failed = true
			fmt.Println("pull_request." + e.Action() + " failed; the later ones wait")
			return fmt.Errorf("downstream unavailable")
		}
		fmt.Printf("pull_request.%s (attempt %d)\n", e.Action(), info.Attempt)
		if e.ID == "3" {
			close(done)
		}
		return nil
	})
	in, err := inbox.Open(context.Background(), inbox.Options{
		Dir: dir, Receiver: wh, Logger: slog.New(slog.DiscardHandler),
		OrderBy:     inbox.BySubject, // the pull request, by its id
		RetryDelays: []time.Duration{10 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close(context.Background())
	if err := in.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	for i, action := range []string{"opened", "synchronize", "closed"} {
		body := fmt.Sprintf(`{"action":%q,"pull_request":{"id":7,"number":3},"repository":{"id":42}}`, action)
		if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: fmt.Sprint(i + 1), Name: "pull_request", Payload: []byte(body)}); err != nil {
			log.Fatal(err)
		}
	}
	<-done
	// Output:
	// pull_request.opened failed; the later ones wait
	// pull_request.opened (attempt 2)
	// pull_request.synchronize (attempt 1)
	// pull_request.closed (attempt 1)
}
