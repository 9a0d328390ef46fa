package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// logBuffer collects an inbox's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRedeliveryOfADeadLetter, black-box over HTTP: a delivery that became
// a dead letter, posted again under its id (the forge's "Redeliver"), is
// answered 202 "requeued" and runs once more; posted again once handled, it
// is answered 200 "duplicate" and does not run.
func TestRedeliveryOfADeadLetter(t *testing.T) {
	wh := newWebhooks(t)
	var fail atomic.Bool
	fail.Store(true)
	var runs, handled atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		runs.Add(1)
		if fail.Load() {
			return errors.New("downstream down")
		}
		handled.Add(1)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, RetryDelays: []time.Duration{}})
	srv := receiver(t, wh, in)
	id, body := "72d3162e-cc78-11e3-81ab-4c9367dc0958", payload("dead")
	send := func() (int, string) {
		t.Helper()
		code, msg, err := post(t, srv.Client(), srv.URL, "issues", id, body, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return code, strings.TrimSpace(msg)
	}
	if code, msg := send(); code != http.StatusAccepted || msg != "queued" {
		t.Fatalf("first delivery: %d %q", code, msg)
	}
	waitFor(t, 10*time.Second, "the dead letter", func() bool {
		r, err := in.Get(context.Background(), id)
		return err == nil && r.Status == delivery.StatusDead
	})
	fail.Store(false) // the downstream is back; someone presses "Redeliver"
	if code, msg := send(); code != http.StatusAccepted || msg != "requeued" {
		t.Fatalf("the same id while a dead letter: %d %q, want 202 requeued", code, msg)
	}
	// The status is written after the handler returns: wait for it, not for
	// the handler's count alone.
	waitFor(t, 10*time.Second, "the requeued delivery handled", func() bool {
		r, err := in.Get(context.Background(), id)
		return handled.Load() == 1 && err == nil && r.Status == delivery.StatusHandled
	})
	if code, msg := send(); code != http.StatusOK || msg != "duplicate" {
		t.Errorf("the same id once handled: %d %q, want 200 duplicate", code, msg)
	}
	time.Sleep(300 * time.Millisecond)
	if n := handled.Load(); n != 1 {
		t.Errorf("handled %d times, want once", n)
	}
	if c := in.Counters(); c.Requeued != 1 || c.Duplicates < 1 {
		t.Errorf("counters %+v: want 1 requeued, a duplicate", c)
	}
}

// TestReplayGuard: a body stored already is refused under another id (200
// duplicate, logged as a possible replay, counted), unless
// AllowRepeatedBodies; a different body under a stored id is answered
// duplicate and logged as id reuse, distinctly.
func TestReplayGuard(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("AllowRepeatedBodies=%v", allow), func(t *testing.T) {
			wh := newWebhooks(t)
			var runs atomic.Int32
			wh.OnAny(func(ctx context.Context, e emitter.Event) error { runs.Add(1); return nil })
			var logs logBuffer
			in := openInbox(t, t.TempDir(), Options{Receiver: wh, AllowRepeatedBodies: allow,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			srv := receiver(t, wh, in)
			body := payload("captured")
			codes := map[int]int{}
			for i := range 20 {
				code, _, err := post(t, srv.Client(), srv.URL, "issues", fmt.Sprintf("fresh-%d", i), body, testSecret)
				if err != nil {
					t.Fatal(err)
				}
				codes[code]++
			}
			want := map[int]int{202: 1, 200: 19}
			if allow {
				want = map[int]int{202: 20}
			}
			if fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Errorf("20 ids, one body: %v, want %v", codes, want)
			}
			waitFor(t, 10*time.Second, "the stored ones handled", func() bool { return int(runs.Load()) == want[202] })
			c := in.Counters()
			if !allow && (c.Replays != 19 || !strings.Contains(logs.String(), "possible replay")) {
				t.Errorf("replays counted %d, want 19; logged: %v", c.Replays, strings.Contains(logs.String(), "possible replay"))
			}
			// A different body under a stored id.
			code, msg, err := post(t, srv.Client(), srv.URL, "issues", "fresh-0", payload("other"), testSecret)
			if err != nil {
				t.Fatal(err)
			}
			if code != http.StatusOK || strings.TrimSpace(msg) != "duplicate" {
				t.Errorf("another body under a stored id: %d %q", code, msg)
			}
			if c := in.Counters(); c.IDReuses != 1 || !strings.Contains(logs.String(), "id reuse") {
				t.Errorf("id reuses counted %d, want 1; log:\n%s", c.IDReuses, logs.String())
			}
		})
	}
}

// TestDedupeOutlivesTheBody: once a handled delivery's stored copy is
// dropped (HandledRetention) and the inbox reopened (so that JetStream's own
// duplicate map, rebuilt from the stored messages, no longer has it), its id
// and its body are still answered duplicate.
func TestDedupeOutlivesTheBody(t *testing.T) {
	dir := t.TempDir()
	wh := newWebhooks(t)
	var runs atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { runs.Add(1); return nil })
	in := openInbox(t, dir, Options{Receiver: wh, HandledRetention: time.Second})
	if res, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: "kept-id", Name: "push", Payload: payload("kept")}); err != nil || res != webhooks.Enqueued {
		t.Fatalf("EnqueueResult: %v, %v", res, err)
	}
	waitFor(t, 10*time.Second, "handled", func() bool { return runs.Load() == 1 })
	waitFor(t, 10*time.Second, "its stored copy dropped", func() bool {
		info, err := in.inbox.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	in.Close(context.Background())
	in = openInbox(t, dir, Options{Receiver: wh, HandledRetention: time.Second})
	for _, d := range []webhooks.Delivery{
		{ID: "kept-id", Name: "push", Payload: payload("kept")},
		{ID: "another-id", Name: "push", Payload: payload("kept")},
	} {
		if res, err := in.Enqueue(context.Background(), d); err != nil || res != webhooks.Duplicate {
			t.Errorf("%s after its copy was dropped and a restart: %v, %v; want Duplicate", d.ID, res, err)
		}
	}
	if held, err := in.Holds(context.Background(), "kept-id"); !held || err != nil {
		t.Errorf("Holds after its copy was dropped: %v, %v; want true (catch-up must not ask for it again)", held, err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times, want once", n)
	}
}

// TestStoreFreesItself: a full store refuses deliveries (503, the log says
// why); once the handled ones pass HandledRetention their space is freed
// and deliveries are taken again, without a restart.
func TestStoreFreesItself(t *testing.T) {
	wh := newWebhooks(t)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { return nil })
	var logs logBuffer
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, MaxStoreBytes: 1 << 20, HandledRetention: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mwLogs := &logBuffer{}
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in, Logger: slog.New(slog.NewTextHandler(mwLogs, nil))})
	srv := httptest.NewServer(mw)
	t.Cleanup(srv.Close)
	big := []byte(`{"pad":"` + strings.Repeat("x", 32<<10) + `"}`)
	send := func(i int) int {
		id := fmt.Sprintf("fill-%03d", i)
		code, _, err := post(t, srv.Client(), srv.URL, "push", id, unique(big, id), testSecret)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	i, acked := 0, 0
	for ; i < 100; i++ {
		code := send(i)
		if code == http.StatusServiceUnavailable {
			break
		}
		if code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d", i, code)
		}
		acked++
	}
	if i == 100 {
		t.Fatal("100 deliveries of 32 KiB stored in a 1 MiB store")
	}
	if !strings.Contains(mwLogs.String(), "store is full") {
		t.Errorf("the 503 is not logged with its reason:\n%s", mwLogs.String())
	}
	t.Logf("%d deliveries of 32 KiB acknowledged in a 1 MiB store, then 503", acked)
	waitFor(t, 20*time.Second, "a delivery taken again", func() bool {
		i++
		return send(i) == http.StatusAccepted
	})
}

// quietTo is a logger writing warnings and errors to w.
func quietTo(t testing.TB, w *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// TestConcurrentRepeats: one body posted at the same moment under 16 ids,
// and one delivery posted 16 times at once, are each stored once.
func TestConcurrentRepeats(t *testing.T) {
	wh := newWebhooks(t)
	var runs atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { runs.Add(1); return nil })
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	srv := receiver(t, wh, in)
	for _, tc := range []struct {
		name string
		id   func(i int) string
	}{{"one body, 16 ids", func(i int) string { return fmt.Sprintf("burst-%d", i) }}, {"one delivery, 16 times", func(int) string { return "same-id" }}} {
		t.Run(tc.name, func(t *testing.T) {
			body := payload(tc.name)
			var wg sync.WaitGroup
			var mu sync.Mutex
			codes := map[int]int{}
			start := make(chan struct{})
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					code, _, err := post(t, srv.Client(), srv.URL, "issues", tc.id(i), body, testSecret)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					codes[code]++
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			if codes[202] != 1 || codes[200] != 15 {
				t.Errorf("16 at once: %v, want one 202 and 15 × 200", codes)
			}
		})
	}
	waitFor(t, 10*time.Second, "both handled", func() bool { return runs.Load() == 2 })
}
