package inbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestOrderHangingHandlersLeaveOtherKeys: 16 ordered deliveries (order by
// repository, 16 keys) whose handlers hang past HandlerTimeout, ignoring
// their context, hold every place the defaults give a 2-worker runner; once
// past their timeout they give their places back, and healthy keys stored
// afterwards each run within their handler time plus 1 s of being stored,
// again and again while the hanging ones still hang. A later delivery of a
// hanging key does not run before the hanging one returns: order holds.
func TestOrderHangingHandlersLeaveOtherKeys(t *testing.T) {
	t.Parallel()
	const (
		hanging     = 16
		timeout     = 300 * time.Millisecond
		handlerTime = 20 * time.Millisecond
	)
	release := make(chan struct{})
	var once sync.Once
	unhang := func() { once.Do(func() { close(release) }) }
	var hung atomic.Int64
	var mu sync.Mutex
	started := map[string]time.Time{} // healthy deliveries, when their handler began
	var order []string                // the deliveries of key 1000, as they ran
	wh := newWebhooks(t)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		key := orderKeyOf(e.ID)
		mu.Lock()
		if key == "repository:1000" {
			order = append(order, e.ID)
		}
		mu.Unlock()
		var k int
		fmt.Sscanf(key, "repository:%d", &k)
		if k >= 1000 && k < 1000+hanging && e.ID[len(e.ID)-1] == 'a' {
			hung.Add(1)
			<-release // ignores ctx: a handler that truly hangs
			return nil
		}
		mu.Lock()
		started[e.ID] = time.Now()
		mu.Unlock()
		time.Sleep(handlerTime)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, Workers: 2, HandlerTimeout: timeout})
	t.Cleanup(unhang) // before the inbox's Close, which waits for the handlers
	if p := runner.Places(2, DefaultOrderPartitions); p != hanging {
		t.Fatalf("places %d: the test wants the hanging deliveries to fill them (%d)", p, hanging)
	}
	ctx := context.Background()
	enqueue := func(id string) time.Time {
		t.Helper()
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	for k := range hanging {
		enqueue(fmt.Sprintf("o-%d-a", 1000+k))
	}
	enqueue("o-1000-b") // behind a hanging key: must wait for it
	waitFor(t, 30*time.Second, "the 16 hanging handlers running", func() bool { return hung.Load() == hanging })

	// Healthy keys, one after another, over several timeouts' worth of time:
	// the first ones meet every place taken by a hanging handler.
	var worst time.Duration
	for i := range 24 {
		id := fmt.Sprintf("o-%d-a", 2000+i)
		stored := enqueue(id)
		waitFor(t, 30*time.Second, id+" running", func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := started[id]
			return ok
		})
		mu.Lock()
		wait := started[id].Sub(stored)
		mu.Unlock()
		worst = max(worst, wait)
		if bound := handlerTime + time.Second; wait > bound {
			t.Errorf("%s began %v after it was stored, beside %d hanging handlers; want within %v", id, wait, hanging, bound)
		}
	}
	t.Logf("24 healthy keys beside %d hanging handlers (HandlerTimeout %v): the slowest began %v after it was stored", hanging, timeout, worst.Round(time.Millisecond))
	if n := hung.Load(); n != hanging {
		t.Fatalf("%d hanging handlers, want %d still hanging: the test proved nothing", n, hanging)
	}
	mu.Lock()
	ran := slices.Clone(order)
	mu.Unlock()
	if !slices.Equal(ran, []string{"o-1000-a"}) {
		t.Errorf("key 1000 ran %v while o-1000-a hung, want only o-1000-a", ran)
	}
	if r, err := in.Get(ctx, "o-1000-b"); err != nil || r.Status != delivery.StatusQueued {
		t.Errorf("o-1000-b behind a hanging delivery: %v %v, want queued", r.Status, err)
	}

	unhang()
	waitHandled(t, in, "o-1000-b", 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []string{"o-1000-a", "o-1000-b"}) {
		t.Errorf("key 1000 ran %v, want o-1000-a then o-1000-b", order)
	}
}

// TestOrderAttemptNumbersAfterCrash: an ordered delivery whose handlers
// were running when its process went away (Close gave up on them, the
// store shut under them: nothing settled) runs again after a restart on the
// same directory as attempt 2, not 1, as an unordered one does; its record
// lists attempt 1 and attempt 2.
func TestOrderAttemptNumbersAfterCrash(t *testing.T) {
	t.Parallel()
	for _, ordered := range []bool{true, false} {
		name := "unordered"
		if ordered {
			name = "ordered"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx := context.Background()
			opts := func(wh *webhooks.Webhooks) Options {
				o := Options{Dir: dir, Receiver: wh, Logger: quiet(t)}
				if ordered {
					o.OrderBy = ByRepository
				}
				return o
			}
			release := make(chan struct{})
			var once sync.Once
			unhang := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unhang)
			running := make(chan int, 1)
			wh := newWebhooks(t)
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				info, _ := webhooks.DeliveryFrom(ctx)
				running <- info.Attempt
				<-release
				return nil
			})
			in, err := openStarted(ctx, opts(wh))
			if err != nil {
				t.Fatal(err)
			}
			const id = "o-7-a"
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-running:
				if n != 1 {
					t.Fatalf("the first run is attempt %d, want 1", n)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the delivery never ran")
			}
			// The crash: the store goes away under the running handler.
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_ = in.Close(cctx)
			cancel()

			s := newSeen()
			wh2 := newWebhooks(t)
			wh2.OnAny(func(ctx context.Context, _ emitter.Event) error {
				info, _ := webhooks.DeliveryFrom(ctx)
				s.add(info)
				return nil
			})
			in2 := openInbox(t, dir, opts(wh2))
			waitHandled(t, in2, id, 30*time.Second)
			runs := s.get(id)
			if len(runs) != 1 || runs[0].Attempt != 2 {
				var got []int
				for _, r := range runs {
					got = append(got, r.Attempt)
				}
				t.Errorf("ran after the restart as attempts %v, want [2]", got)
			}
			r, err := in2.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var nums []int
			for _, a := range r.Attempts {
				nums = append(nums, a.Number)
			}
			if !slices.Equal(nums, []int{1, 2}) {
				t.Errorf("recorded attempts %v, want [1 2]", nums)
			}
		})
	}
}
