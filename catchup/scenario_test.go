package catchup_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

// receiver is a webhooks receiver over real HTTP on 127.0.0.1 that counts
// the deliveries its handlers ran, by delivery id. It can answer 503 before
// the middleware, as a receiver that is up but failing does.
type receiver struct {
	url     string
	failing atomic.Bool

	mu      sync.Mutex
	handled map[string]int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{handled: map[string]int{}}
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		r.mu.Lock()
		r.handled[e.ID]++
		r.mu.Unlock()
		return nil
	})
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/api/forge/webhooks"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.failing.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		mw.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/api/forge/webhooks"
	return r
}

func (r *receiver) count(guid string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handled[guid]
}

func (r *receiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.handled {
		n += c
	}
	return n
}

// downURL is the URL of a port nobody listens on.
func downURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/api/forge/webhooks"
}

// holderSet is a Holder over a fixed set of delivery ids, standing for the
// durable inbox.
type holderSet map[string]bool

func (h holderSet) Holds(_ context.Context, id string) (bool, error) { return h[id], nil }

func TestCatchupScenario(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	recv := newReceiver(t)
	payload := func(action string) []byte { return []byte(`{"action":"` + action + `","issue":{"number":1}}`) }
	send := func(event, action string) forgetest.Attempt {
		a := e.forge.Send(forgetest.AppHook, event, payload(action))
		e.clock.Advance(time.Minute)
		return a
	}

	// Up: delivered and handled.
	e.forge.SetReceiver(recv.url)
	var ok []forgetest.Attempt
	for range 3 {
		ok = append(ok, send("issues", "opened"))
	}
	// Down: nobody listens.
	e.forge.SetReceiver(downURL(t))
	var missed []forgetest.Attempt
	for range 4 {
		missed = append(missed, send("issues", "closed"))
	}
	// Up but answering 503.
	e.forge.SetReceiver(recv.url)
	recv.failing.Store(true)
	for range 2 {
		missed = append(missed, send("pull_request", "opened"))
	}
	// Failed, but someone redelivered it by hand since: succeeded.
	fixed := send("issues", "edited")
	e.forge.Record(forgetest.AppHook, forgetest.Attempt{GUID: fixed.GUID, Redelivery: true, Status: "OK", StatusCode: 200, Event: "issues", Action: "edited"}, nil)
	// Failed as the forge saw it, but the inbox holds it.
	held := send("issues", "labeled")
	recv.failing.Store(false)
	for _, a := range append(missed, fixed, held) {
		if a.StatusCode >= 200 && a.StatusCode < 300 {
			t.Fatalf("delivery %s did not fail: %+v", a.GUID, a)
		}
	}
	if recv.total() != len(ok) {
		t.Fatalf("receiver handled %d deliveries before catch-up, want %d", recv.total(), len(ok))
	}

	o := e.options()
	o.Holder = holderSet{held.GUID: true}
	rep, err := e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != len(missed) || rep.Count(catchup.Redeliver) != len(missed) {
		t.Errorf("requested %d (decided %d), want %d", rep.Requested, rep.Count(catchup.Redeliver), len(missed))
	}
	if n := rep.Count(catchup.SkipSucceeded); n != len(ok)+1 {
		t.Errorf("%d skipped as succeeded, want %d", n, len(ok)+1)
	}
	if n := rep.Count(catchup.SkipHeld); n != 1 {
		t.Errorf("%d skipped as held, want 1", n)
	}
	for _, a := range missed {
		if n := recv.count(a.GUID); n != 1 {
			t.Errorf("missed delivery %s handled %d times, want 1", a.GUID, n)
		}
	}
	for _, a := range ok {
		if n := recv.count(a.GUID); n != 1 {
			t.Errorf("delivered %s handled %d times, want 1", a.GUID, n)
		}
	}
	for _, a := range []forgetest.Attempt{fixed, held} {
		if n := recv.count(a.GUID); n != 0 {
			t.Errorf("%s (skipped) handled %d times, want 0", a.GUID, n)
		}
	}
	// Each redelivery is of the guid's latest attempt, and only those.
	redelivered := map[string]int{}
	for _, a := range e.forge.Attempts(forgetest.AppHook) {
		if a.Redelivery && a.GUID != fixed.GUID {
			redelivered[a.GUID]++
			if a.StatusCode != http.StatusOK {
				t.Errorf("redelivery of %s answered %d", a.GUID, a.StatusCode)
			}
		}
	}
	if len(redelivered) != len(missed) {
		t.Errorf("forge logged redeliveries of %d guids, want %d", len(redelivered), len(missed))
	}
	if !rep.Through.After(held.DeliveredAt) && !rep.Through.Equal(held.DeliveredAt) {
		t.Errorf("checkpoint %v is before the newest attempt read %v", rep.Through, held.DeliveredAt)
	}

	// A second run right after requests nothing.
	before := len(posts(e.forge))
	e.clock.Advance(time.Minute)
	rep2, err := e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Requested != 0 || len(posts(e.forge)) != before {
		t.Errorf("second run requested %d (forge saw %d more POSTs), want 0", rep2.Requested, len(posts(e.forge))-before)
	}
	for _, a := range missed {
		if n := recv.count(a.GUID); n != 1 {
			t.Errorf("after the second run, %s handled %d times, want 1", a.GUID, n)
		}
	}
}

// While the receiver is still down, the redeliveries fail too; the next run
// does not ask again (the forge's log is not a retry queue).
func TestCatchupReceiverStillDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	e.forge.SetReceiver(downURL(t))
	for range 3 {
		e.forge.Send(forgetest.AppHook, "push", []byte(`{"ref":"refs/heads/main"}`))
		e.clock.Advance(time.Minute)
	}
	rep, err := e.run(e.options())
	if err != nil || rep.Requested != 3 {
		t.Fatalf("first run: requested %d, err %v; want 3, nil", rep.Requested, err)
	}
	e.clock.Advance(time.Minute)
	rep, err = e.run(e.options())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != 0 || rep.Count(catchup.SkipRequested) != 3 {
		t.Errorf("second run: requested %d, %d skipped as requested earlier; want 0 and 3", rep.Requested, rep.Count(catchup.SkipRequested))
	}
	if n := len(posts(e.forge)); n != 3 {
		t.Errorf("forge saw %d redelivery requests, want 3", n)
	}
}
