package runner

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestKeysWatchFallsBehind: in a cluster's mode (no directory lock), the
// watch of the order keys loses its consumer on the server, as when the
// server holding it is killed. A failed ordered delivery is given back due
// after its 20 ms retry delay; this runner's copy of its record still says
// leased by itself for AckWait (30 s), so it runs again only once the
// watch is started again: within a few seconds, not after the lease nor
// after the watch's missed heartbeats.
func TestKeysWatchFallsBehind(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	h := newHarness(t, func(webhooks.Delivery) error {
		if runs.Add(1) == 1 {
			return errFail
		}
		return nil
	}, func(c *Config) {
		c.OrderBy, c.Embedded, c.AckWait = byRepo, false, 30*time.Second
	}, true)
	ctx := context.Background()
	st, err := h.js.Stream(ctx, "KV_"+testName+"_KEYS")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the watch's consumer", func() bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Consumers > 0
	})
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if err := st.DeleteConsumer(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.store("a1", "key:a")
	h.waitStatus("a1", delivery.StatusHandled)
	took := time.Since(start)
	t.Logf("handled %v after it was stored, its first attempt failed", took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("the retry ran %v after the delivery was stored, want within 8 s", took)
	}
}

// editRecord changes the record name as another receiver would, with a
// write conditional on the revision read, read again on a conflict.
func editRecord(t *testing.T, h *harness, name string, change func(*KeyRecord)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 100 {
		e, err := h.keys.Get(ctx, name)
		if err != nil {
			t.Fatalf("reading record %s: %v", name, err)
		}
		var rec KeyRecord
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			t.Fatal(err)
		}
		change(&rec)
		if _, err = h.keys.Update(ctx, name, rec.Marshal(), e.Revision()); err == nil {
			return
		}
		if !IsWrongRevision(err) {
			t.Fatalf("writing record %s: %v", name, err)
		}
	}
	t.Fatalf("record %s kept changing", name)
}

// readRecord returns the record name; ok false when there is none.
func readRecord(t *testing.T, h *harness, name string) (rec KeyRecord, ok bool) {
	t.Helper()
	e, err := h.keys.Get(context.Background(), name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return rec, true
}

// takeOver is another receiver claiming the record after its lease ran
// out; giveBack is that receiver giving it back, due at once.
func takeOver(r *KeyRecord) { r.Owner, r.Lease = "other", time.Now().Add(time.Hour) }
func giveBack(r *KeyRecord) { r.Owner, r.Lease, r.Due = "", time.Time{}, time.Now() }

// running reports whether a run of the record name is under way here.
func running(h *harness, name string) bool {
	k := h.r.ordered
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.busy[name]
}

// TestKeysTakenOverHeadStays: a runner whose lease ran out while its Head's
// handlers ran, and whose record another receiver claimed, settles the
// Head's status but leaves the record to the new owner, which runs the Head
// again: moving the key on under it would let the next delivery run, and
// finish, before that run (handled a1, a2, then a1 again: out of order).
// Once the new owner gives the record back, the Head is found handled and
// the next delivery runs.
func TestKeysTakenOverHeadStays(t *testing.T) {
	t.Parallel()
	started, finish := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	h := newHarness(t, func(d webhooks.Delivery) error {
		if d.ID == "a1" && first.CompareAndSwap(false, true) {
			close(started)
			<-finish
		}
		return nil
	}, func(c *Config) {
		c.OrderBy, c.Embedded, c.AckWait = byRepo, false, 30*time.Second
	}, true)
	name := KeyName("key:a")
	s1 := h.store("a1", "key:a")
	s2 := h.store("a2", "key:a")
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("a1 never ran")
	}
	waitFor(t, 30*time.Second, "a2 admitted behind a1", func() bool {
		rec, ok := readRecord(t, h, name)
		return ok && rec.Tail == s2
	})
	editRecord(t, h, name, takeOver)
	close(finish)
	h.waitStatus("a1", delivery.StatusHandled)
	waitFor(t, 30*time.Second, "the run of a1 over", func() bool { return !running(h, name) })
	if rec, ok := readRecord(t, h, name); !ok || rec.Head != s1 || rec.Owner != "other" {
		t.Errorf("record after the run: %+v (present %v), want Head %d owned by the receiver that took it over", rec, ok, s1)
	}
	if n := len(h.ran("a2")); n != 0 {
		t.Fatalf("a2 ran %d times under the record's new owner", n)
	}
	editRecord(t, h, name, giveBack)
	h.waitStatus("a2", delivery.StatusHandled)
	if n := len(h.ran("a1")); n != 1 {
		t.Errorf("a1 ran %d times, want 1: its status says handled", n)
	}
}

// TestKeysTakenOverBeforeHandlers: when the reads and the status write
// before the handlers outlast a third of the lease (a loaded machine, a
// node lost), the runner renews the lease before the handlers run, and
// does not run them when another receiver claimed the record meanwhile.
func TestKeysTakenOverBeforeHandlers(t *testing.T) {
	t.Parallel()
	const ackWait = 300 * time.Millisecond
	var mu sync.Mutex
	var order []string
	h := newHarness(t, func(d webhooks.Delivery) error {
		mu.Lock()
		order = append(order, d.ID)
		mu.Unlock()
		return nil
	}, func(c *Config) {
		c.OrderBy, c.Embedded, c.AckWait = byRepo, false, ackWait
	}, false)
	name := KeyName("key:a")
	var tookOver atomic.Bool
	h.intake.onPut = func(sts []KeyedStatus) error {
		for _, s := range sts {
			if s.Key == stored.SubjectToken("a1") && s.Status.Status == delivery.StatusRunning && tookOver.CompareAndSwap(false, true) {
				// A status write slower than a third of the lease, during
				// which another receiver claims the record.
				editRecord(t, h, name, takeOver)
				time.Sleep(ackWait / 2)
			}
		}
		return nil
	}
	if err := h.r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.store("a1", "key:a")
	h.store("a2", "key:a")
	waitFor(t, 30*time.Second, "a1's attempt written", tookOver.Load)
	waitFor(t, 30*time.Second, "the run of a1 over", func() bool { return !running(h, name) })
	if n := len(h.ran("a1")); n != 0 {
		t.Fatalf("a1's handlers ran %d times on a lease another receiver had taken over", n)
	}
	editRecord(t, h, name, giveBack)
	h.waitStatus("a2", delivery.StatusHandled)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a1", "a2"}; !slices.Equal(order, want) {
		t.Errorf("ran %v, want %v", order, want)
	}
}
