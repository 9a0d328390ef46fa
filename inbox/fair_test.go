package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestFairShare: the due keys are ordered so that each next one is of the
// tenant with the fewest running.
func TestFairShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cands   string // tenant of each candidate, oldest first ("-": none)
		running map[string]int
		want    string
	}{
		{"one tenant keeps its order", "aaaa", nil, "aaaa"},
		{"a backlog and a newcomer take turns", "aaaab", nil, "abaaa"},
		{"the newcomer first when the backlog runs", "aaaabb", map[string]int{"a": 2}, "bbaaaa"},
		{"three tenants", "aaabbc", nil, "abcaba"},
		{"without a tenant is a group", "aa--", map[string]int{"a": 1}, "-a-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cands []string
			for i, c := range tc.cands {
				cands = append(cands, fmt.Sprintf("%c%d", c, i))
			}
			running := map[string]int{}
			for k, v := range tc.running {
				running[k] = v
			}
			got := fairShare(cands, func(s string) string {
				if s[0] == '-' {
					return ""
				}
				return s[:1]
			}, running)
			var b strings.Builder
			for _, s := range got {
				b.WriteByte(s[0])
			}
			if b.String() != tc.want {
				t.Errorf("order %s (%v), want %s", b.String(), got, tc.want)
			}
			// Each tenant's candidates keep their order.
			for _, tenant := range "ab-" {
				var sub []string
				for _, s := range got {
					if rune(s[0]) == tenant {
						sub = append(sub, s)
					}
				}
				if !slices.IsSortedFunc(sub, func(x, y string) int { return strings.Compare(x[1:], y[1:]) }) && len(sub) > 1 {
					t.Errorf("tenant %c out of order: %v", tenant, sub)
				}
			}
		})
	}
}

// TestFairQueue: a worker that frees up takes a delivery of the tenant with
// the fewest running, turns among those tied, each tenant's in the order
// queued; after close nothing is queued and pushes are refused.
func TestFairQueue(t *testing.T) {
	q := newFairQueue()
	var all []*fakeMsg
	push := func(tenant string, n int) {
		for range n {
			m := &fakeMsg{data: []byte(tenant + fmt.Sprint(len(all)))}
			all = append(all, m)
			if !q.push(m, tenant) {
				t.Fatal("push refused")
			}
		}
	}
	push("a", 6)
	pop := func() string {
		m, ok := q.pop()
		if !ok {
			return "none"
		}
		return string(m.msg.Data())
	}
	// a alone: every worker.
	for i, want := range []string{"a0", "a1", "a2"} {
		if got := pop(); got != want {
			t.Fatalf("pop %d: %s, want %s", i, got, want)
		}
	}
	push("b", 2)
	push("", 1)
	// a runs three: b and the group without a tenant come first.
	for i, want := range []string{"b6", "8", "b7", "a3"} {
		if got := pop(); got != want {
			t.Fatalf("pop %d: %s, want %s", i, got, want)
		}
	}
	q.done("a")
	q.done("a")
	q.done("a")
	if got := pop(); got != "a4" {
		t.Fatalf("pop: %s, want a4", got)
	}
	if left := q.close(); len(left) != 1 || string(left[0].Data()) != "a5" {
		t.Fatalf("close left %d", len(left))
	}
	if q.push(&fakeMsg{}, "a") {
		t.Error("push after close taken")
	}
	if got := pop(); got != "none" {
		t.Errorf("pop after close: %s", got)
	}
}

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

// fakeMsg is a message for the queue's own test: Data only.
type fakeMsg struct {
	jetstream.Msg
	data []byte
}

func (m *fakeMsg) Data() []byte { return m.data }

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
