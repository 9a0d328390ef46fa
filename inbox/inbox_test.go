package inbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxEndToEnd: over HTTP, a verified delivery is stored (202), runs its
// handlers once with its headers and attempt 1, a duplicate answers 200 and
// runs nothing, a bad signature stores nothing; the queries see it.
func TestInboxEndToEnd(t *testing.T) {
	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, ok := webhooks.DeliveryFrom(ctx)
		if !ok {
			t.Error("no Delivery in the handler's context")
		}
		s.add(info)
		return nil
	})
	var changes atomic.Int32
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	defer in.Watch(func(delivery.Record) { changes.Add(1) })()
	srv := receiver(t, wh, in)
	c := srv.Client()

	tests := []struct {
		name, id, secret string
		want             int
		wantBody         string
	}{
		{"stored", "d-1", testSecret, 202, "queued"},
		{"another", "d-2", testSecret, 202, "queued"},
		{"duplicate", "d-1", testSecret, 200, "duplicate"},
		{"bad signature", "d-3", "wrong-secret", 400, "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, err := post(t, c, srv.URL, "issues", tt.id, payload(tt.id), tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("answer %d %q, want %d %q", code, body, tt.want, tt.wantBody)
			}
		})
	}
	waitFor(t, 10*time.Second, "two deliveries handled", func() bool { return s.count() == 2 })
	ctx := context.Background()
	waitHandled(t, in, "d-2", 5*time.Second)
	time.Sleep(200 * time.Millisecond) // a second run would show by now
	runs := s.get("d-1")
	if len(runs) != 1 {
		t.Fatalf("d-1 ran %d times, want once", len(runs))
	}
	if runs[0].Attempt != 1 || runs[0].Name != "issues" || runs[0].Header.Get("User-Agent") != "forge-hookshot/test" || runs[0].ReceivedAt.IsZero() {
		t.Errorf("handler saw %+v", runs[0])
	}
	if len(s.get("d-3")) != 0 {
		t.Error("a handler ran for a rejected delivery")
	}

	r, err := in.Get(ctx, "d-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "d-1" || r.Name != "issues" || r.Action != "opened" || string(r.Payload) != string(payload("d-1")) ||
		r.Status != delivery.StatusHandled || len(r.Attempts) != 1 || r.Attempts[0].Number != 1 || r.Attempts[0].Err != "" || r.Seq == 0 ||
		r.Header.Get(webhooks.HeaderSignature) == "" {
		t.Errorf("Get(d-1) = %+v", r)
	}
	if _, err := in.Get(ctx, "d-3"); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("Get of a rejected delivery: %v, want delivery.ErrNotFound", err)
	}
	list, err := in.List(ctx, delivery.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "d-2" || list[1].ID != "d-1" {
		t.Errorf("List: %d records %v", len(list), ids(list))
	}
	if l, _ := in.List(ctx, delivery.ListOptions{Before: list[0].Seq}); len(l) != 1 || l[0].ID != "d-1" {
		t.Errorf("List Before: %v", ids(l))
	}
	if l, _ := in.List(ctx, delivery.ListOptions{Status: delivery.StatusDead}); len(l) != 0 {
		t.Errorf("List dead: %v", ids(l))
	}
	if l, _ := in.List(ctx, delivery.ListOptions{Name: "push"}); len(l) != 0 {
		t.Errorf("List push: %v", ids(l))
	}
	for id, want := range map[string]bool{"d-1": true, "d-3": false, "": false} {
		if got, err := in.Holds(ctx, id); err != nil || got != want {
			t.Errorf("Holds(%q) = %v, %v", id, got, err)
		}
	}
	if n := changes.Load(); n < 6 { // 2 × (queued, running, handled)
		t.Errorf("watcher called %d times, want at least 6", n)
	}
}

func ids(rs []delivery.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// TestInboxRetryScheduleToDead: a failing handler (errors and a panic) runs
// once per delay and once more, then the delivery is a dead letter with its
// attempts; Retry runs it again with the attempt numbers going on.
func TestInboxRetryScheduleToDead(t *testing.T) {
	wh := newWebhooks(t)
	var fail atomic.Bool
	fail.Store(true)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		if !fail.Load() {
			return nil
		}
		if info.Attempt == 2 {
			panic("handler exploded")
		}
		return errors.New("downstream unavailable")
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, RetryDelays: []time.Duration{20 * time.Millisecond, 50 * time.Millisecond}})
	ctx := context.Background()
	if res, err := in.Enqueue(ctx, webhooks.Delivery{ID: "x", Name: "push", Payload: []byte(`{"ref":"main"}`), Signature: "sha256=00"}); err != nil || res != webhooks.Enqueued {
		t.Fatal(res, err)
	}
	waitFor(t, 10*time.Second, "a dead letter", func() bool {
		d, _ := in.Dead(ctx)
		return len(d) == 1
	})
	dead, _ := in.Dead(ctx)
	r := dead[0]
	if r.ID != "x" || r.Status != delivery.StatusDead || len(r.Attempts) != 3 {
		t.Fatalf("dead letter %+v", r)
	}
	for i, a := range r.Attempts {
		if a.Number != i+1 || a.Err == "" || a.Start.IsZero() {
			t.Errorf("attempt %d: %+v", i, a)
		}
	}
	if !strings.Contains(r.Attempts[1].Err, "handler exploded") || !strings.Contains(r.Attempts[1].Err, "goroutine") {
		t.Errorf("the panic's attempt lacks the panic or its stack: %q", r.Attempts[1].Err)
	}
	if got, _ := in.Get(ctx, "x"); got.Status != delivery.StatusDead {
		t.Errorf("Get: status %q", got.Status)
	}
	if l, _ := in.List(ctx, delivery.ListOptions{Status: delivery.StatusDead}); len(l) != 1 {
		t.Errorf("List dead: %v", ids(l))
	}
	if err := in.Retry(ctx, "nope"); !errors.Is(err, delivery.ErrNotFound) {
		t.Errorf("Retry of an unknown id: %v", err)
	}
	fail.Store(false)
	if err := in.Retry(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	waitHandled(t, in, "x", 10*time.Second)
	runs := s.get("x")
	if len(runs) != 4 || runs[3].Attempt != 4 {
		t.Errorf("runs %d, last attempt %d; want 4, 4", len(runs), runs[len(runs)-1].Attempt)
	}
	if d, _ := in.Dead(ctx); len(d) != 0 {
		t.Errorf("dead letters after Retry: %d", len(d))
	}
	if err := in.Retry(ctx, "x"); !errors.Is(err, delivery.ErrNotDead) {
		t.Errorf("Retry of a handled delivery: %v", err)
	}
	r, _ = in.Get(ctx, "x")
	if len(r.Attempts) != 4 || r.Attempts[3].Err != "" {
		t.Errorf("attempts after Retry: %+v", r.Attempts)
	}
	// Replay runs a handled delivery once more.
	if err := in.Replay(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replay", func() bool { return len(s.get("x")) == 5 })
	if l, _ := in.List(ctx, delivery.ListOptions{}); len(l) != 1 {
		t.Errorf("List after Replay shows %d records, want the delivery once", len(l))
	}
}

// TestInboxForeignMessages: messages on the inbox's subjects that the inbox
// did not write (no seal) go to the dead letters at once; the workers go on.
func TestInboxForeignMessages(t *testing.T) {
	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	ctx := context.Background()
	foreign := []*nats.Msg{
		{Subject: in.inSubj + "x", Data: []byte("hello")},
		{Subject: in.inSubj + "a.b", Data: []byte(`{}`), Header: nats.Header{"Other": {"1"}}},
		{Subject: in.inSubj + "c", Data: []byte(`not json`), Header: nats.Header{stored.HeaderVersion: {"1"}, stored.HeaderEvent: {"push"}, stored.HeaderDelivery: {"c"}}},
		{Subject: in.inSubj + "d", Data: []byte(`[1]`), Header: nats.Header{stored.HeaderVersion: {"1"}, stored.HeaderEvent: {"push"}}},
	}
	for _, m := range foreign {
		if _, err := in.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "good", Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "four dead letters", func() bool {
		d, _ := in.Dead(ctx)
		return len(d) == 4
	})
	waitFor(t, 10*time.Second, "the good delivery", func() bool { return len(s.get("good")) == 1 })
	if s.count() != 1 {
		t.Errorf("handlers ran for %d deliveries, want 1", s.count())
	}
	dead, _ := in.Dead(ctx)
	for _, d := range dead {
		if len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Err, "unsealed") {
			t.Errorf("dead letter %+v: want one attempt, refused as unsealed", d)
		}
	}
	if c := in.Counters(); c.Unsealed != 4 || c.BadSeals != 0 {
		t.Errorf("counters %+v, want 4 unsealed", c)
	}
}

// TestInboxRestart: deliveries, dedupe and state survive a close and reopen
// of the directory; a delivery enqueued with no worker runs after restart.
func TestInboxRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	in, err := Open(ctx, Options{Dir: dir, Logger: quiet(t)}) // no Receiver: store only
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{Dir: dir, Logger: quiet(t)}); !errors.Is(err, ErrInUse) {
		t.Errorf("second Open of one directory: %v, want ErrInUse", err)
	}
	for _, id := range []string{"r-1", "r-2", ""} {
		if res, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "push", Payload: payload(id)}); err != nil || res != webhooks.Enqueued {
			t.Fatal(res, err)
		}
	}
	if err := in.PutState(ctx, "hook/42 checkpoint", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "late", Name: "push", Payload: []byte(`{}`)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close: %v", err)
	}

	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in = openInbox(t, dir, Options{Receiver: wh})
	waitFor(t, 10*time.Second, "three deliveries after restart", func() bool { return s.count() == 3 })
	if res, err := in.Enqueue(ctx, webhooks.Delivery{ID: "r-1", Name: "push", Payload: payload("r-1")}); err != nil || res != webhooks.Duplicate {
		t.Errorf("a delivery stored before the restart: duplicate %v, %v", res, err)
	}
	if res, err := in.Enqueue(ctx, webhooks.Delivery{Name: "push", Payload: payload("")}); err != nil || res != webhooks.Enqueued {
		t.Errorf("a delivery without id: duplicate %v, %v (never a duplicate)", res, err)
	}
	v, err := in.GetState(ctx, "hook/42 checkpoint")
	if err != nil || string(v) != "12345" {
		t.Errorf("GetState = %q, %v", v, err)
	}
	if v, err := in.GetState(ctx, "missing"); err != nil || v != nil {
		t.Errorf("GetState of a missing key = %q, %v", v, err)
	}
}

// TestInboxStreamLimit: a full stream refuses with a clear error, the
// middleware answers 503, and the handler does not run.
func TestInboxStreamLimit(t *testing.T) {
	wh := newWebhooks(t)
	var ran atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { ran.Add(1); return nil })
	in := openInbox(t, t.TempDir(), Options{MaxStoreBytes: 8192})
	srv := receiver(t, wh, in)
	big := []byte(`{"pad":"` + strings.Repeat("x", 1500) + `"}`)
	var codes []int
	for i := range 5 {
		id := "big-" + string(rune('a'+i))
		code, body, err := post(t, srv.Client(), srv.URL, "push", id, unique(big, id), testSecret)
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, code)
		if code == http.StatusServiceUnavailable && !strings.Contains(body, "store") {
			t.Errorf("503 body %q", body)
		}
	}
	if codes[0] != 202 || codes[4] != 503 {
		t.Errorf("answers %v: want 202 first, 503 once full", codes)
	}
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		id := "more-" + string(rune('a'+i))
		_, err = in.Enqueue(context.Background(), webhooks.Delivery{ID: id, Name: "push", Payload: unique(big, id)})
	}
	if err == nil || !strings.Contains(err.Error(), "store is full") || !strings.Contains(err.Error(), "MaxStoreBytes") {
		t.Errorf("Enqueue into a full stream: %v, want an error naming the bound", err)
	}
}

// TestInboxLongHandlerKeepsLease: a handler running for several AckWaits
// runs once: its lease is renewed while it runs.
func TestInboxLongHandlerKeepsLease(t *testing.T) {
	wh := newWebhooks(t)
	var runs atomic.Int32
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		runs.Add(1)
		time.Sleep(1500 * time.Millisecond)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, AckWait: 300 * time.Millisecond})
	ctx := context.Background()
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "long", Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	waitHandled(t, in, "long", 10*time.Second)
	time.Sleep(700 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Errorf("the long handler ran %d times, want once", n)
	}
}

// TestInboxLapsedLeaseRunsOnce: a delivery the server hands out again while
// its handlers still run here (its lease lapsed: a renewal came late on a
// loaded machine; here a nak sent as the server's own reply subject would)
// does not run a second time beside the first, and is handled once.
func TestInboxLapsedLeaseRunsOnce(t *testing.T) {
	wh := newWebhooks(t)
	var runs atomic.Int32
	started, release := make(chan struct{}, 4), make(chan struct{})
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, Workers: 4})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // before the inbox's Close, which waits for the handlers
	ctx := context.Background()
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "lapsed", Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	<-started
	cons, err := in.inbox.Consumer(ctx, in.workersConsumer())
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reply := fmt.Sprintf("$JS.ACK.%s.%s.1.%d.%d.%d.0", info.Stream, info.Name, info.Delivered.Stream, info.Delivered.Consumer, time.Now().UnixNano())
	if err := in.nc.Publish(reply, []byte("-NAK")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "handed out again", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.Delivered.Consumer > 1
	})
	select {
	case <-started:
		t.Fatal("the handlers ran a second time while the first run went on")
	case <-time.After(300 * time.Millisecond):
	}
	free()
	waitHandled(t, in, "lapsed", 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Errorf("the handlers ran %d times, want once", n)
	}
}

// TestInboxDrain: Close lets a running handler finish, and one that does not
// finish by the deadline runs again after a restart.
func TestInboxDrain(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		wantRuns int // after the restart
	}{
		{"finishes in time", 5 * time.Second, 0},
		{"past the deadline", 100 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := newWebhooks(t)
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				started <- struct{}{}
				<-release
				return nil
			})
			in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, Logger: quiet(t), AckWait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			id := "drain-" + tc.name
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "push", Payload: unique([]byte(`{}`), id)}); err != nil {
				t.Fatal(err)
			}
			<-started
			cctx, cancel := context.WithTimeout(ctx, tc.deadline)
			go func() { time.Sleep(500 * time.Millisecond); close(release) }()
			err = in.Close(cctx)
			cancel()
			if (err != nil) != (tc.wantRuns == 1) {
				t.Fatalf("Close: %v", err)
			}
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "after", Name: "push", Payload: []byte(`{}`)}); !errors.Is(err, ErrClosed) {
				t.Errorf("Enqueue while draining: %v", err)
			}
			time.Sleep(600 * time.Millisecond) // the handler returns meanwhile
			wh2 := newWebhooks(t)
			s := newSeen()
			wh2.OnAny(func(ctx context.Context, e emitter.Event) error {
				info, _ := webhooks.DeliveryFrom(ctx)
				s.add(info)
				return nil
			})
			in2 := openInbox(t, dir, Options{Receiver: wh2, AckWait: time.Second})
			if tc.wantRuns == 1 {
				waitFor(t, 10*time.Second, "the unfinished delivery after restart", func() bool { return len(s.get(id)) == 1 })
				if a := s.get(id)[0].Attempt; a != 2 {
					t.Errorf("attempt %d after restart, want 2", a)
				}
			} else {
				time.Sleep(1500 * time.Millisecond)
				if n := len(s.get(id)); n != 0 {
					t.Errorf("a delivery finished before Close ran again %d times", n)
				}
			}
			in2.Close(ctx)
		})
	}
}

// TestInboxHostileHeaders: request headers that would instruct JetStream
// (Nats-*) or pass for the inbox's own (Forgehooks-*) are not stored.
func TestInboxHostileHeaders(t *testing.T) {
	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh})
	srv := receiver(t, wh, in)
	if code, body, _ := post(t, srv.Client(), srv.URL, "push", "first", payload("first"), testSecret); code != 202 {
		t.Fatalf("%d %s", code, body)
	}
	hostile := map[string]string{
		"Nats-Rollup": "all", "Nats-Msg-Id": "other", "Nats-Expected-Stream": "nope", "Nats-Ttl": "1s",
		"Forgehooks-Attempts-Before": "99", "Forgehooks-Key": "ifirst", "Forgehooks-Event": "forged",
	}
	sig := mustSign(t, payload("hostile"))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+webhooks.DefaultPath, strings.NewReader(string(payload("hostile"))))
	for k, v := range hostile {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "push")
	req.Header.Set(webhooks.HeaderDelivery, "hostile")
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("hostile headers: %d", res.StatusCode)
	}
	waitFor(t, 10*time.Second, "both handled", func() bool { return s.count() == 2 })
	if runs := s.get("hostile"); runs[0].Attempt != 1 || runs[0].Name != "push" {
		t.Errorf("the handler saw %+v", runs[0])
	}
	ctx := context.Background()
	list, _ := in.List(ctx, delivery.ListOptions{})
	if len(list) != 2 {
		t.Fatalf("List after the hostile delivery: %v (a rollup purged the stream?)", ids(list))
	}
	for k := range list[0].Header {
		if stored.InternalHeader(k) {
			t.Errorf("stored header %s", k)
		}
	}
	if res, err := in.Enqueue(ctx, webhooks.Delivery{ID: "other", Name: "push", Payload: []byte(`{}`)}); res != webhooks.Enqueued || err != nil {
		t.Errorf("a delivery with the id of a dropped Nats-Msg-Id: duplicate %v, %v", res, err)
	}
}

func mustSign(t *testing.T, body []byte) string {
	t.Helper()
	sig, err := signing.Sign(testSecret, body)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// TestInboxStoreFull: when JetStream's storage is used up (as on a full
// disk), deliveries are refused with 503 and a clear error, nothing stored
// before is lost, and the workers go on.
func TestInboxStoreFull(t *testing.T) {
	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, MaxStoreBytes: 256 << 10})
	srv := receiver(t, wh, in)
	big := []byte(`{"pad":"` + strings.Repeat("x", 16<<10) + `"}`)
	var acked []string
	var refused string
	for i := range 64 {
		id := fmt.Sprintf("full-%02d", i)
		code, body, err := post(t, srv.Client(), srv.URL, "push", id, unique(big, id), testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusServiceUnavailable {
			refused = body
			break
		}
		if code != 202 {
			t.Fatalf("%s: %d %s", id, code, body)
		}
		acked = append(acked, id)
	}
	if refused == "" {
		t.Fatalf("64 deliveries of 16 KB stored in a 256 KB store")
	}
	_, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: "one-more", Name: "push", Payload: unique(big, "one-more")})
	if err == nil || !strings.Contains(err.Error(), "store is full") {
		t.Errorf("Enqueue into a full store: %v, want an error saying the store is full", err)
	}
	waitFor(t, 10*time.Second, "every stored delivery handled", func() bool { return s.count() == len(acked) })
	t.Logf("%d stored, then 503: %s", len(acked), strings.TrimSpace(refused))
}
