package inbox

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestTraceparentEveryAttempt: the traceparent a delivery arrived with is
// stored with it and is in the Delivery's Header (DeliveryFrom) on every attempt, the retry
// included, on whichever worker runs it.
func TestTraceparentEveryAttempt(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	wh := newWebhooks(t)
	seen := make(chan string, 4)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		seen <- info.Header.Get("Traceparent")
		if info.Attempt == 1 {
			return errors.New("fails once")
		}
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, RetryDelays: []time.Duration{10 * time.Millisecond}})
	srv := receiver(t, wh, in)
	body := payload("tp-1")
	sig, _ := signing.Sign(testSecret, body)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+webhooks.DefaultPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issues")
	req.Header.Set(webhooks.HeaderDelivery, "tp-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	req.Header.Set("Traceparent", tp)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("answer %d", res.StatusCode)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		select {
		case got := <-seen:
			if got != tp {
				t.Errorf("attempt %d: traceparent %q, want %q", attempt, got, tp)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("attempt %d did not run", attempt)
		}
	}
}
