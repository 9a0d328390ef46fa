package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// A handler marks an error that no retry can cure as final: an inbox moves
// its delivery to the dead letters after that attempt. The cause stays
// visible to errors.Is.
func ExamplePermanent() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "a secret for the example", Logger: slog.New(slog.DiscardHandler)})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		// Say the label the bot must add does not exist in the repository.
		return webhooks.Permanent(fmt.Errorf("adding label triage: %w", fs.ErrNotExist))
	})
	err := wh.Receive(context.Background(), emitter.Event{ID: "1", Name: "issues", Payload: []byte(`{"action":"opened"}`)})
	fmt.Println(err)
	fmt.Println(webhooks.IsPermanent(err), errors.Is(err, fs.ErrNotExist))
	// Output:
	// adding label triage: file does not exist
	// true true
}
