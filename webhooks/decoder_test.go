package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
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
	dec := emitter.Decoder{Key: "typed", Decode: func(p []byte, _ bool) (any, string, bool) {
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

// TestPayloadOwnedOnlyForTheMiddlewaresBodies: a body the middleware read for
// one delivery reaches the decoder and the handlers as owned (typed payloads
// may share its bytes); a payload passed to VerifyAndReceive, Receive or
// ReceiveDelivery is the caller's, which it may reuse, and is not.
func TestPayloadOwnedOnlyForTheMiddlewaresBodies(t *testing.T) {
	t.Parallel()
	body := []byte(`{"ref":"refs/heads/main"}`)
	for _, tc := range []struct {
		name    string
		deliver func(t *testing.T, wh *Webhooks)
		owned   bool
	}{
		{"middleware", func(t *testing.T, wh *Webhooks) {
			srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Path: "/"}))
			defer srv.Close()
			if code, answer := post(t, srv.Client(), srv.URL, "push", "1", body); code != http.StatusOK {
				t.Fatalf("answered %d %q", code, answer)
			}
		}, true},
		{"middleware inline", func(t *testing.T, wh *Webhooks) {
			srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Path: "/", Inline: true}))
			defer srv.Close()
			if code, answer := post(t, srv.Client(), srv.URL, "push", "1", body); code != http.StatusOK {
				t.Fatalf("answered %d %q", code, answer)
			}
		}, true},
		{"VerifyAndReceive", func(t *testing.T, wh *Webhooks) {
			if err := wh.VerifyAndReceive(context.Background(), Delivery{ID: "1", Name: "push", Payload: body, Signature: sign(t, secret, body)}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"Receive", func(t *testing.T, wh *Webhooks) {
			if err := wh.Receive(context.Background(), emitter.Event{ID: "1", Name: "push", Payload: body}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"ReceiveDelivery", func(t *testing.T, wh *Webhooks) {
			if err := wh.ReceiveDelivery(context.Background(), Delivery{ID: "1", Name: "push", Payload: body}); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wh := mustNew(t, Options{Secret: secret})
			var decoded, handled []bool
			var mu sync.Mutex
			wh.OnDecoded("push", emitter.Decoder{Key: "typed", Decode: func(_ []byte, owned bool) (any, string, bool) {
				mu.Lock()
				decoded = append(decoded, owned)
				mu.Unlock()
				return "decoded", "", true
			}}, func(_ context.Context, e emitter.Event) error {
				mu.Lock()
				handled = append(handled, e.PayloadOwned())
				mu.Unlock()
				return nil
			})
			tc.deliver(t, wh)
			mu.Lock()
			defer mu.Unlock()
			if len(decoded) != 1 || decoded[0] != tc.owned || len(handled) != 1 || handled[0] != tc.owned {
				t.Errorf("decoder saw owned %v, handler %v; want one delivery, owned %v", decoded, handled, tc.owned)
			}
		})
	}
}
