package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

func result(id string, status int, verified bool, payload string) webhooks.Result {
	r := webhooks.Result{
		ID: id, Name: "issues", Status: status, Verified: verified,
		Header:     http.Header{"X-Forge-Delivery": {id}},
		ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: time.Millisecond,
	}
	if verified {
		r.Payload = []byte(payload)
		r.Action = "opened"
	}
	return r
}

func TestRingAdd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		res    webhooks.Result
		added  bool
		status delivery.Status
	}{
		{"handled", result("a", 200, true, `{}`), true, delivery.StatusHandled},
		{"handled after the timeout", result("a", 202, true, `{}`), true, delivery.StatusHandled},
		{"handlers failed", func() webhooks.Result {
			r := result("a", 500, true, `{}`)
			r.Err = errors.New("boom")
			return r
		}(), true, delivery.StatusFailed},
		{"bad signature", result("a", 400, false, ""), false, ""},
		{"busy", result("a", 503, true, `{}`), false, ""},
		{"duplicate", func() webhooks.Result { r := result("a", 200, true, `{}`); r.Duplicate = true; return r }(), false, ""},
		{"not JSON object", result("a", 400, true, `[]`), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := inspector.NewRing(inspector.RingOptions{})
			if got := r.Add(tc.res); got != tc.added {
				t.Fatalf("Add = %v, want %v", got, tc.added)
			}
			if !tc.added {
				return
			}
			rec, err := r.Get(context.Background(), "a")
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tc.status || len(rec.Attempts) != 1 || rec.Action != "opened" || rec.Seq != 1 {
				t.Errorf("record %+v", rec)
			}
			if tc.res.Err != nil && rec.Attempts[0].Err != "boom" {
				t.Errorf("attempt error %q", rec.Attempts[0].Err)
			}
		})
	}
}

func TestRingCopiesPayload(t *testing.T) {
	t.Parallel()
	r := inspector.NewRing(inspector.RingOptions{})
	res := result("a", 200, true, `{"a":1}`)
	r.Add(res)
	res.Payload[2] = 'X' // the middleware reuses nothing, but OnResult's contract allows it
	rec, _ := r.Get(context.Background(), "a")
	if string(rec.Payload) != `{"a":1}` {
		t.Fatalf("payload %s changed with the caller's slice", rec.Payload)
	}
}

func TestRingBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		opts       inspector.RingOptions
		n, payload int
		wantMax    int
	}{
		{"by count", inspector.RingOptions{MaxRecords: 10}, 100, 10, 10},
		{"by bytes", inspector.RingOptions{MaxBytes: 64 << 10}, 100, 4 << 10, 16},
		{"one larger than the bound stays", inspector.RingOptions{MaxBytes: 1 << 10}, 3, 8 << 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := inspector.NewRing(tc.opts)
			body := `{"x":"` + strings.Repeat("a", tc.payload) + `"}`
			for i := range tc.n {
				r.Add(result(fmt.Sprint(i), 200, true, body))
			}
			n, b := r.Len()
			if n > tc.wantMax || n == 0 {
				t.Errorf("holds %d records, want 1..%d", n, tc.wantMax)
			}
			if max := tc.opts.MaxBytes; max > 0 && n > 1 && b > max {
				t.Errorf("holds %d bytes, more than %d", b, max)
			}
			// The newest are kept, the oldest gone.
			if _, err := r.Get(context.Background(), fmt.Sprint(tc.n-1)); err != nil {
				t.Errorf("newest: %v", err)
			}
			if _, err := r.Get(context.Background(), "0"); !errors.Is(err, delivery.ErrNotFound) {
				t.Errorf("oldest: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestRingList(t *testing.T) {
	t.Parallel()
	r := inspector.NewRing(inspector.RingOptions{})
	for i := range 10 {
		res := result(fmt.Sprint(i), 200, true, `{}`)
		if i%2 == 1 {
			res.Name = "push"
		}
		if i%3 == 0 {
			res.Status, res.Err = 500, errors.New("x")
		}
		r.Add(res)
	}
	ids := func(recs []delivery.Record) string {
		var s []string
		for _, r := range recs {
			s = append(s, r.ID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		opts delivery.ListOptions
		want string
	}{
		{delivery.ListOptions{Limit: 3}, "9,8,7"},
		{delivery.ListOptions{Limit: 3, Before: 8}, "6,5,4"}, // Seq = id+1
		{delivery.ListOptions{Name: "push"}, "9,7,5,3,1"},
		{delivery.ListOptions{Status: delivery.StatusFailed}, "9,6,3,0"},
		{delivery.ListOptions{Status: delivery.StatusFailed, Name: "issues", Before: 7}, "0"},
		{delivery.ListOptions{Before: 1}, ""},
	} {
		got, err := r.List(context.Background(), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if ids(got) != tc.want {
			t.Errorf("List(%+v) = %s, want %s", tc.opts, ids(got), tc.want)
		}
	}
}

func TestRingReplayAndRetry(t *testing.T) {
	t.Parallel()
	wh, err := webhooks.New(webhooks.Options{Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var attempts []int
	fail := true
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		info, ok := webhooks.DeliveryFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		if !ok || info.ID != "a" || info.Name != "issues" || info.Header.Get("X-Forge-Delivery") != "a" {
			t.Errorf("delivery info %+v, %v", info, ok)
		}
		attempts = append(attempts, info.Attempt)
		if fail {
			panic("replayed and panicked")
		}
		return nil
	})
	r := inspector.NewRing(inspector.RingOptions{Webhooks: wh})
	var changes []string
	var cmu sync.Mutex
	stop := r.Watch(func(rec delivery.Record) {
		cmu.Lock()
		changes = append(changes, string(rec.Status))
		cmu.Unlock()
	})
	defer stop()
	ctx := context.Background()
	r.Add(result("a", 200, true, `{"action":"opened"}`))
	if err := r.Retry(ctx, "a"); !errors.Is(err, delivery.ErrNotDead) {
		t.Fatalf("Retry of a handled delivery: %v", err)
	}
	if err := r.Replay(ctx, "a"); err == nil {
		t.Fatal("Replay with a panicking handler: no error")
	}
	rec, _ := r.Get(ctx, "a")
	if rec.Status != delivery.StatusFailed || len(rec.Attempts) != 2 || !strings.Contains(rec.Attempts[1].Err, "replayed and panicked") || !strings.Contains(rec.Attempts[1].Stack, "goroutine") {
		t.Fatalf("after a failed replay: %+v", rec)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if err := r.Retry(ctx, "a"); err != nil {
		t.Fatalf("Retry of a failed delivery: %v", err)
	}
	rec, _ = r.Get(ctx, "a")
	if rec.Status != delivery.StatusHandled || len(rec.Attempts) != 3 || rec.Attempts[2].Err != "" || rec.Attempts[2].Number != 3 {
		t.Fatalf("after retry: %+v", rec)
	}
	if fmt.Sprint(attempts) != "[2 3]" {
		t.Errorf("handler saw attempts %v, want [2 3]", attempts)
	}
	cmu.Lock()
	defer cmu.Unlock()
	if got := strings.Join(changes, ","); got != "handled,running,failed,running,handled" {
		t.Errorf("changes %s", got)
	}
	if err := r.Replay(ctx, "missing"); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("Replay of a missing id: %v", err)
	}
	if err := inspector.NewRing(inspector.RingOptions{}).Replay(ctx, "a"); !errors.Is(err, delivery.ErrUnsupported) {
		t.Errorf("Replay without Webhooks: %v", err)
	}
}

// TestRingConcurrent adds, lists, replays and watches at once, for -race.
func TestRingConcurrent(t *testing.T) {
	t.Parallel()
	wh, _ := webhooks.New(webhooks.Options{Secret: "s"})
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	r := inspector.NewRing(inspector.RingOptions{Webhooks: wh, MaxRecords: 50})
	stop := r.Watch(func(delivery.Record) {})
	defer stop()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				id := fmt.Sprint(g, "-", i)
				r.Add(result(id, 200, true, `{"action":"opened"}`))
				r.List(context.Background(), delivery.ListOptions{Limit: 10})
				if i%10 == 0 {
					r.Replay(context.Background(), id)
				}
			}
		})
	}
	wg.Wait()
	if n, _ := r.Len(); n != 50 {
		t.Errorf("holds %d, want 50", n)
	}
}
