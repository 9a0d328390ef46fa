package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxFairShare: a tenant's backlog, stored first, does not hold back
// another tenant's deliveries stored after it: the later tenant's are all
// handled while most of the backlog still waits (first come, first served
// would handle the whole backlog first). The deliveries queued for a
// worker longer than AckWait keep their leases: each runs once.
func TestInboxFairShare(t *testing.T) {
	wh := newWebhooks(t)
	var mu sync.Mutex
	runs := map[string]int{}
	var aDone, bDone atomic.Int32
	var aWhenBDone atomic.Int32
	aWhenBDone.Store(-1)
	const nA, nB = 60, 4
	gate := make(chan struct{})
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		<-gate // a's first ones wait until every delivery is stored
		time.Sleep(150 * time.Millisecond)
		mu.Lock()
		runs[info.Tenant+"/"+info.ID]++
		mu.Unlock()
		if info.Tenant == "b" {
			if bDone.Add(1) == nB {
				aWhenBDone.Store(aDone.Load())
			}
		} else {
			aDone.Add(1)
		}
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, Workers: 2, AckWait: time.Second})
	ctx := context.Background()
	enqueue := func(tenant string, n int) {
		for i := range n {
			id := fmt.Sprintf("%s-%d", tenant, i)
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Tenant: tenant, Payload: unique(payload(id), tenant+id)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue("a", nA)
	enqueue("b", nB)
	close(gate)
	waitFor(t, 2*time.Minute, "every delivery handled", func() bool { return int(aDone.Load()) == nA && int(bDone.Load()) == nB })
	// Fair: b's four run among the next few of a once stored; a's backlog
	// leaves half to run when b's are done, whatever the machine's speed.
	if got := aWhenBDone.Load(); got > nA/2 {
		t.Errorf("b's deliveries were all handled only after %d of a's %d", got, nA)
	}
	time.Sleep(2 * time.Second) // a second run would come after AckWait
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
}

// TestInboxTenantStoreBound: a tenant whose deliveries are not yet handled
// fill its share (TenantMaxStoreBytes) is refused (ErrTenantFull) while
// another tenant's and those without a tenant are stored and a duplicate is
// still answered duplicate; the count is read again after a restart, and
// the deliveries handled give their bytes back.
func TestInboxTenantStoreBound(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	wh := newWebhooks(t)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		if down.Load() {
			return fmt.Errorf("the downstream is down")
		}
		return nil
	})
	body := func(id string) []byte { return unique(payload(id), id) }
	size := len(body("a-1"))
	o := Options{Receiver: wh, TenantMaxStoreBytes: int64(3*size + size/2), RetryDelays: []time.Duration{3 * time.Second, time.Hour}}
	dir := t.TempDir()
	in := openInbox(t, dir, o)
	ctx := context.Background()
	enqueue := func(in *Inbox, tenant, id string) (webhooks.EnqueueResult, error) {
		return in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Tenant: tenant, Payload: body(id)})
	}
	for _, tc := range []struct {
		tenant, id string
		want       webhooks.EnqueueResult
		full       bool
	}{
		{"a", "a-1", webhooks.Enqueued, false},
		{"a", "a-2", webhooks.Enqueued, false},
		{"a", "a-3", webhooks.Enqueued, false},
		{"a", "a-4", 0, true},
		{"a", "a-1", webhooks.Duplicate, false},
		{"b", "b-1", webhooks.Enqueued, false},
		{"", "x-1", webhooks.Enqueued, false},
		{"", "x-2", webhooks.Enqueued, false},
		{"", "x-3", webhooks.Enqueued, false},
		{"", "x-4", webhooks.Enqueued, false},
	} {
		res, err := enqueue(in, tc.tenant, tc.id)
		if tc.full != errors.Is(err, ErrTenantFull) || !tc.full && (err != nil || res != tc.want) {
			t.Fatalf("%s/%s: %v %v, want %v (full %v)", tc.tenant, tc.id, res, err, tc.want, tc.full)
		}
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	in = openInbox(t, dir, o)
	if _, err := enqueue(in, "a", "a-4"); !errors.Is(err, ErrTenantFull) {
		t.Fatalf("a-4 after a restart: %v, want ErrTenantFull", err)
	}
	if res, err := enqueue(in, "b", "b-2"); err != nil || res != webhooks.Enqueued {
		t.Fatalf("b-2 after a restart: %v %v", res, err)
	}
	down.Store(false)
	waitFor(t, time.Minute, "a's share given back once handled", func() bool {
		res, err := enqueue(in, "a", "a-4")
		return err == nil && res == webhooks.Enqueued
	})
}
