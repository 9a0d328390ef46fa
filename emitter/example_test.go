package emitter_test

import (
	"context"
	"errors"
	"fmt"

	"forgehooks.dev/forgehooks/emitter"
)

func ExampleNew() {
	em := emitter.New(emitter.Options{})
	em.On("ping", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("pong from delivery", e.ID)
		return nil
	})
	err := em.Receive(context.Background(), emitter.Event{ID: "d1", Name: "ping", Payload: []byte(`{"zen":"Keep it simple."}`)})
	fmt.Println(err)
	// Output:
	// pong from delivery d1
	// <nil>
}

func ExampleEmitter_On() {
	em := emitter.New(emitter.Options{})
	// "issues.opened" runs for issues deliveries whose action is "opened";
	// "issues" runs for every issues delivery.
	em.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("opened:", e.Name, e.Action())
		return nil
	})
	em.Receive(context.Background(), emitter.Event{Name: "issues", Payload: []byte(`{"action":"opened"}`)})
	em.Receive(context.Background(), emitter.Event{Name: "issues", Payload: []byte(`{"action":"closed"}`)})
	// Output: opened: issues opened
}

func ExampleEmitter_OnError() {
	em := emitter.New(emitter.Options{})
	em.On("push", func(ctx context.Context, e emitter.Event) error {
		return errors.New("database unavailable")
	})
	done := make(chan struct{})
	em.OnError(func(ctx context.Context, err *emitter.Error) {
		fmt.Printf("delivery %s (%s) failed: %v\n", err.Event.ID, err.Event.Name, err)
		close(done)
	})
	err := em.Receive(context.Background(), emitter.Event{ID: "d2", Name: "push", Payload: []byte(`{}`)})
	<-done
	var herr *emitter.Error
	fmt.Println(errors.As(err, &herr), len(herr.Errors))
	// Output:
	// delivery d2 (push) failed: database unavailable
	// true 1
}

func ExampleEmitter_RemoveListener() {
	em := emitter.New(emitter.Options{})
	l := em.OnAny(func(ctx context.Context, e emitter.Event) error {
		fmt.Println("saw", e.Name)
		return nil
	})
	em.Receive(context.Background(), emitter.Event{Name: "star", Payload: []byte(`{}`)})
	fmt.Println(em.RemoveListener("*", l))
	em.Receive(context.Background(), emitter.Event{Name: "star", Payload: []byte(`{}`)})
	// Output:
	// saw star
	// true
}

// A program that reads each delivery into a buffer of its own, and never
// reuses it, hands it over with ReceiveOwned: typed payloads then share the
// buffer's bytes instead of copying them. A buffer the caller reuses (a
// pooled one, say) goes through Receive.
func ExampleEmitter_ReceiveOwned() {
	em := emitter.New(emitter.Options{})
	em.On("ping", func(ctx context.Context, e emitter.Event) error {
		fmt.Println("owned:", e.PayloadOwned())
		return nil
	})
	body := []byte(`{"zen":"Keep it simple."}`) // read for this delivery alone
	em.ReceiveOwned(context.Background(), emitter.Event{ID: "d3", Name: "ping", Payload: body})

	reused := []byte(`{"zen":"Keep it simple."}`) // overwritten by the next delivery
	em.Receive(context.Background(), emitter.Event{ID: "d4", Name: "ping", Payload: reused})
	// Output:
	// owned: true
	// owned: false
}
