package inbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestSkip: a delivery waiting for its retry (ordered, at the head of its
// key, or not ordered) is set aside as a dead letter; the later ones of its
// key run; Retry runs it again at the end of its key's order. A delivery
// that does not wait is refused.
func TestSkip(t *testing.T) {
	wh := newWebhooks(t)
	var mu sync.Mutex
	var ran []string
	failing := map[string]bool{"o-1-a": true, "u-1": true}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if failing[e.ID] {
			return errors.New("fails until skipped")
		}
		ran = append(ran, e.ID)
		return nil
	})
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, RetryDelays: []time.Duration{time.Hour}})
	ctx := context.Background()
	enqueue := func(id string, body []byte) {
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: body}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(id string) delivery.Status {
		r, err := in.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return r.Status
	}
	enqueue("o-1-a", orderPayload("o-1-a"))
	enqueue("o-1-b", orderPayload("o-1-b"))
	enqueue("u-1", []byte(`{"zen":"no repository: not ordered"}`))
	enqueue("o-2-a", orderPayload("o-2-a"))
	waitFor(t, 10*time.Second, "o-1-a and u-1 retrying, o-2-a handled", func() bool {
		return status("o-1-a") == delivery.StatusRetrying && status("u-1") == delivery.StatusRetrying && slices.Contains(got(), "o-2-a")
	})
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"o-2-a", ErrNotWaiting}, // handled
		{"nope", delivery.ErrNotFound},
	} {
		if err := in.Skip(ctx, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("Skip(%s) = %v, want %v", tc.id, err, tc.want)
		}
	}
	if s := status("o-1-b"); s != delivery.StatusQueued {
		t.Fatalf("o-1-b behind its key: %s", s)
	}
	for _, id := range []string{"o-1-a", "u-1"} {
		if err := in.Skip(ctx, id); err != nil {
			t.Fatalf("Skip(%s): %v", id, err)
		}
		if s := status(id); s != delivery.StatusDead {
			t.Errorf("%s after Skip: %s, want dead", id, s)
		}
	}
	waitFor(t, 10*time.Second, "o-1-b handled once o-1-a is set aside", func() bool { return slices.Contains(got(), "o-1-b") })
	if err := in.Skip(ctx, "o-1-a"); !errors.Is(err, ErrNotWaiting) {
		t.Errorf("Skip of a dead letter: %v, want ErrNotWaiting", err)
	}
	dead, err := in.Dead(ctx)
	if err != nil || len(dead) != 2 {
		t.Fatalf("Dead: %d, %v", len(dead), err)
	}
	// Retried, it runs at the end of its key's order.
	mu.Lock()
	failing["o-1-a"] = false
	mu.Unlock()
	if err := in.Retry(ctx, "o-1-a"); err != nil {
		t.Fatal(err)
	}
	enqueue("o-1-c", orderPayload("o-1-c"))
	waitFor(t, 10*time.Second, "o-1-c handled", func() bool { return slices.Contains(got(), "o-1-c") })
	var key1 []string
	for _, id := range got() {
		if orderKeyOf(id) == "repository:1" {
			key1 = append(key1, id)
		}
	}
	if want := []string{"o-1-b", "o-1-a", "o-1-c"}; !slices.Equal(key1, want) {
		t.Errorf("key 1 ran %v, want %v", key1, want)
	}
}
