package webhooks

import (
	"context"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/decodehook"
)

// TestDecodeHookReachesTheEmitter: package payloads registers a typed
// handler's decoder on a *Webhooks through decodehook (the Webhooks has no
// public decode hook); the decoder then runs once per delivery, in place of
// the emitter's scan, and its value is what the handler finds.
func TestDecodeHookReachesTheEmitter(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	var calls atomic.Int32
	dec := decodehook.Decoder{Key: "typed", Decode: func(p []byte) (any, string, bool) {
		calls.Add(1)
		return "decoded", "", true
	}}
	var got any
	l, ok := decodehook.Register(wh, "push", dec, emitter.Handler(func(ctx context.Context, e emitter.Event) error {
		got, _ = e.Memo("typed", func() (any, error) { return "decoded again", nil })
		return nil
	}))
	if !ok || l.(*emitter.Listener) == nil {
		t.Fatalf("decodehook.Register(*Webhooks) = %v, %v", l, ok)
	}
	body := []byte(`{"ref":"refs/heads/main"}`)
	if err := wh.VerifyAndReceive(context.Background(), Delivery{ID: "1", Name: "push", Payload: body, Signature: sign(t, secret, body)}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || got != "decoded" {
		t.Errorf("decoder ran %d times, handler saw %v; want 1 and the decoder's value", calls.Load(), got)
	}
	if !wh.RemoveListener("push", l.(*emitter.Listener)) {
		t.Error("the listener is not removable by name")
	}
}
