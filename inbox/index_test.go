package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

// indexOf returns the embedded inbox's dedupe records.
func indexOf(t *testing.T, in *Inbox) *recstore.Indexed {
	t.Helper()
	r, ok := in.seen.(*recstore.Indexed)
	if !ok {
		t.Fatalf("the embedded inbox keeps its records in %T, not in an indexed stream", in.seen)
	}
	return r
}

// reopen closes in and opens the embedded inbox in dir again.
func reopen(t *testing.T, in *Inbox, dir string) *Inbox {
	t.Helper()
	if err := in.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return openInbox(t, dir, Options{})
}

func wantValue(t *testing.T, r recstore.Records, key, want string) {
	t.Helper()
	got, err := r.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("get %q = %q, want %q", key, got, want)
	}
	if ok, err := r.Has(context.Background(), key); err != nil || !ok {
		t.Fatalf("has %q = %v, %v", key, ok, err)
	}
}

func wantNone(t *testing.T, r recstore.Records, key string) {
	t.Helper()
	if v, err := r.Get(context.Background(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get %q = %q, %v; want ErrKeyNotFound", key, v, err)
	}
}

// TestImportBucket: the dedupe records an earlier version kept in a
// key-value bucket are moved into the indexed stream at Open.
func TestImportBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := openInbox(t, dir, Options{})
	kv, err := in.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultName + "_SEEN"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"i_old1", "i_old2", "b_deleted"} {
		if _, err := kv.Put(ctx, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "b_deleted"); err != nil {
		t.Fatal(err)
	}
	in = reopen(t, in, dir)
	r := indexOf(t, in)
	wantValue(t, r, "i_old1", "v-i_old1")
	wantValue(t, r, "i_old2", "v-i_old2")
	wantNone(t, r, "b_deleted")
	if _, err := in.js.Stream(ctx, "KV_"+DefaultName+"_SEEN"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the imported bucket is still there: %v", err)
	}
}

// TestStatusesWrittenBeforeClose: every delivery whose handlers ran before
// Close has its status stored (the writes not waited for are written at
// Close), seen by the next Open.
func TestStatusesWrittenBeforeClose(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	ran := map[string]bool{}
	wh := newWebhooks(t)
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		mu.Lock()
		ran[e.ID] = true
		mu.Unlock()
		return nil
	})
	dir := t.TempDir()
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	n := 3000
	if raceEnabled && !longtest.Enabled() {
		n = 1000 // still far more than run before Close
	}
	for i := range n {
		id := fmt.Sprintf("close-%05d", i)
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: unique(payload("close"), id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) == 0 {
		t.Fatal("no delivery ran before Close")
	}
	in = openInbox(t, dir, Options{})
	for id := range ran {
		r, err := in.Get(ctx, id)
		if err != nil || r.Status != delivery.StatusHandled {
			t.Fatalf("%s ran before Close; after it: %v %v (%d of %d ran)", id, r.Status, err, len(ran), n)
		}
	}
	t.Logf("%d of %d ran before Close, each with its status", len(ran), n)
}
