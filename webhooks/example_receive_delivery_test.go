package webhooks_test

import (
	"context"
	"fmt"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// An inbox hands a stored delivery over as one value; the handlers find it
// whole, attempt and tenant included, with DeliveryFrom.
func ExampleWebhooks_ReceiveDelivery() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "mysecret"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		d, _ := webhooks.DeliveryFrom(ctx)
		fmt.Println(e.ID, "attempt", d.Attempt, "tenant", d.Tenant)
		return nil
	})
	d := webhooks.Delivery{ID: "d1", Name: "issues", Payload: []byte(`{"action":"opened"}`), Attempt: 2, Tenant: "acme"}
	// No signature check: the delivery was verified before it was stored.
	if err := wh.ReceiveDelivery(context.Background(), d); err != nil {
		fmt.Println(err)
	}
	// Output: d1 attempt 2 tenant acme
}
