package inbox

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/webhooks"
)

// recordingReceiver is a Receiver that keeps what it is handed.
type recordingReceiver struct {
	fail func(d webhooks.Delivery) error

	mu    sync.Mutex
	got   []webhooks.Delivery
	inCtx []bool // whether each call's context carried a delivery
}

func (r *recordingReceiver) ReceiveDelivery(ctx context.Context, d webhooks.Delivery) error {
	_, ok := webhooks.DeliveryFrom(ctx)
	r.mu.Lock()
	r.got = append(r.got, d)
	r.inCtx = append(r.inCtx, ok)
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail(d)
	}
	return nil
}

func (r *recordingReceiver) calls() ([]webhooks.Delivery, []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhooks.Delivery(nil), r.got...), append([]bool(nil), r.inCtx...)
}

// TestReceiverGetsOneValue: a Receiver is handed each stored delivery as one
// value (id, name, body, the request's headers, tenant, received time and
// attempt number, numbered on across a retry), and its context carries no
// delivery of its own.
func TestReceiverGetsOneValue(t *testing.T) {
	t.Parallel()
	rcv := &recordingReceiver{fail: func(d webhooks.Delivery) error {
		if d.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}}
	in := openInbox(t, t.TempDir(), Options{Receiver: rcv, RetryDelays: []time.Duration{10 * time.Millisecond}})
	received := time.Now().Add(-time.Minute).UTC()
	d := webhooks.Delivery{ID: "one", Name: "issues", Payload: []byte(`{"action":"opened"}`), Tenant: "acme",
		Header: http.Header{"X-Request-Id": {"r-1"}}, ReceivedAt: received}
	if _, err := in.Enqueue(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	waitHandled(t, in, "acme/one", 30*time.Second)
	got, inCtx := rcv.calls()
	if len(got) != 2 {
		t.Fatalf("handed %d times, want 2 (a failure, then its retry)", len(got))
	}
	for i, g := range got {
		if inCtx[i] {
			t.Errorf("call %d: the context carries a delivery besides the value", i+1)
		}
		if g.ID != d.ID || g.Name != d.Name || string(g.Payload) != string(d.Payload) || g.Tenant != d.Tenant ||
			g.Header.Get("X-Request-Id") != "r-1" || !g.ReceivedAt.Equal(received) || g.Attempt != i+1 {
			t.Errorf("call %d: handed %+v", i+1, g)
		}
	}
}
