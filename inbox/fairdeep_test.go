package inbox

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

var fairFloodN = flag.Int("inbox.fair.n", 5000, "deliveries of the flooding tenant in the deep fair-share tests; 1000 under -race or -short unless set or FORGEHOOKS_LONG=1")

// The handlers of the deep fair-share tests: the flooding tenant's are
// slow, the quiet tenant's take quietHandler, and each of the quiet
// tenant's deliveries must end within quietHandler plus quietSlack of being
// stored, however many of the flood's wait.
const (
	floodHandler = 200 * time.Millisecond
	quietHandler = 100 * time.Millisecond
	quietSlack   = time.Second
	quietN       = 12
)

// fairFlood counts the runs of a deep fair-share test.
type fairFlood struct {
	floodDone atomic.Int64
	mu        sync.Mutex
	runs      map[string]int
	ended     map[string]time.Time // the quiet tenant's, by id
}

func newFairFlood() *fairFlood {
	return &fairFlood{runs: map[string]int{}, ended: map[string]time.Time{}}
}

// receiver returns a Webhooks that runs the test's handlers.
func (f *fairFlood) receiver(t testing.TB) *webhooks.Webhooks {
	wh := newWebhooks(t)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		d := floodHandler
		if info.Tenant == "quiet" {
			d = quietHandler
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
		f.runs[info.Tenant+"/"+info.ID]++
		if info.Tenant == "quiet" {
			f.ended[info.ID] = time.Now()
		}
		f.mu.Unlock()
		if info.Tenant != "quiet" {
			f.floodDone.Add(1)
		}
		return nil
	})
	return wh
}

// run stores n deliveries of the tenant "flood" through ins, in turn, then
// quietN of the tenant "quiet", one after the other, each once the one
// before was handled, and checks that each of the quiet ones was handled
// within quietHandler + quietSlack of being stored while most of the flood
// still waited.
func (f *fairFlood) run(t *testing.T, ins []*Inbox, n int) {
	ctx := context.Background()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id := fmt.Sprintf("flood-%d", i)
				d := webhooks.Delivery{ID: id, Name: "issues", Tenant: "flood", Payload: unique(payload(id), id)}
				if _, err := ins[i%len(ins)].Enqueue(ctx, d); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("storing the flood: %v", err)
	}
	t.Logf("%d deliveries of the flood stored in %v; %d handled by then", n, time.Since(start).Round(time.Millisecond), f.floodDone.Load())
	var waits []time.Duration
	for i := range quietN {
		id := fmt.Sprintf("quiet-%d", i)
		d := webhooks.Delivery{ID: id, Name: "issues", Tenant: "quiet", Payload: unique(payload(id), id)}
		if _, err := ins[i%len(ins)].Enqueue(ctx, d); err != nil {
			t.Fatal(err)
		}
		stored := time.Now()
		var end time.Time
		waitFor(t, 3*time.Minute, "the quiet tenant's "+id+" handled", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			end = f.ended[id]
			return !end.IsZero()
		})
		waits = append(waits, end.Sub(stored))
	}
	left := int64(n) - f.floodDone.Load()
	t.Logf("the quiet tenant's deliveries, stored to handled: %v (handler %v); %d of the flood still waiting", waits, quietHandler, left)
	for i, w := range waits {
		if w > quietHandler+quietSlack {
			t.Errorf("quiet-%d handled %v after it was stored, more than its handler's %v + %v", i, w.Round(time.Millisecond), quietHandler, quietSlack)
		}
	}
	if left < int64(n)/2 {
		t.Errorf("only %d of the flood's %d still waited at the end: the quiet tenant did not meet a backlog", left, n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, runs := range f.runs {
		if runs != 1 {
			t.Errorf("%s ran %d times", id, runs)
		}
	}
	if !slices.ContainsFunc(waits, func(w time.Duration) bool { return w > 0 }) {
		t.Error("no wait measured")
	}
}

// TestInboxFairShareDeep: embedded, two workers; a tenant's flood of
// thousands on slow handlers is stored first, then another tenant's
// deliveries are each handled within their handler's time plus a second.
func TestInboxFairShareDeep(t *testing.T) {
	t.Parallel()
	f := newFairFlood()
	in := openInbox(t, t.TempDir(), Options{Receiver: f.receiver(t), Workers: 2})
	f.run(t, []*Inbox{in}, scaled("inbox.fair.n", *fairFloodN, 1000))
}

// TestInboxClusterFairShareDeep: the same on a 3-node cluster with two
// receivers, each with two workers, the flood and the quiet tenant's
// deliveries stored through both.
func TestInboxClusterFairShareDeep(t *testing.T) {
	cl := sharedCluster(t)
	f := newFairFlood()
	name := fmt.Sprintf("FAIRDEEP_%d", time.Now().UnixNano())
	var ins []*Inbox
	for i := range 2 {
		u := cl.urls()
		u = append(u[i:], u[:i]...)
		ins = append(ins, openClusterInbox(t, u, Options{Name: name, Receiver: f.receiver(t), Workers: 2}))
	}
	f.run(t, ins, scaled("inbox.fair.n", *fairFloodN, 1000))
}
