package webhooks

import (
	"context"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

// TestDecodeHookReachesTheEmitter: package payloads registers a typed
// handler's decoder on a *Webhooks with OnDecoded (as an
// emitter.DecodingRegistrar); the decoder then runs once per delivery, in place of
// the emitter's scan, and its value is what the handler finds.
func TestDecodeHookReachesTheEmitter(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	var calls atomic.Int32
	dec := emitter.Decoder{Key: "typed", Decode: func(p []byte) (any, string, bool) {
		calls.Add(1)
		return "decoded", "", true
	}}
	var got any
	var r emitter.DecodingRegistrar = wh
	l := r.OnDecoded("push", dec, emitter.Handler(func(ctx context.Context, e emitter.Event) error {
		got, _ = e.Memo("typed", func() (any, error) { return "decoded again", nil })
		return nil
	}))
	if l == nil {
		t.Fatal("OnDecoded returned no listener")
	}
	body := []byte(`{"ref":"refs/heads/main"}`)
	if err := wh.VerifyAndReceive(context.Background(), Delivery{ID: "1", Name: "push", Payload: body, Signature: sign(t, secret, body)}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || got != "decoded" {
		t.Errorf("decoder ran %d times, handler saw %v; want 1 and the decoder's value", calls.Load(), got)
	}
	if !wh.RemoveListener("push", l) {
		t.Error("the listener is not removable by name")
	}
}
