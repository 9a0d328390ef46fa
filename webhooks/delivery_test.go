package webhooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// TestDeliveryFrom checks that handlers see their delivery's headers,
// received-at and attempt, over HTTP and through VerifyAndReceive.
func TestDeliveryFrom(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	got := make(chan Delivery, 1)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, ok := DeliveryFrom(ctx)
		if !ok {
			return errors.New("no Delivery in the handler's context")
		}
		got <- info
		return nil
	})
	srv := startServer(t, NewMiddleware(wh, MiddlewareOptions{}), false)
	before := time.Now()
	res, err := srv.Client().Do(delivery(t, context.Background(), srv, "issues"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	info := <-got
	if info.ID != "d-issues" || info.Name != "issues" || info.Attempt != 1 {
		t.Errorf("DeliveryFrom = %+v, want id d-issues, event issues, attempt 1", info)
	}
	if info.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Header misses the request's Content-Type: %v", info.Header)
	}
	if info.ReceivedAt.Before(before) || info.ReceivedAt.After(time.Now()) {
		t.Errorf("ReceivedAt %v is not within the request", info.ReceivedAt)
	}

	body := []byte(`{"zen":"ok"}`)
	if err := wh.VerifyAndReceive(context.Background(), Delivery{ID: "x", Name: "ping", Payload: body, Signature: sign(t, secret, body)}); err != nil {
		t.Fatal(err)
	}
	if info := <-got; info.ID != "x" || info.Name != "ping" || info.Attempt != 1 || info.Header != nil {
		t.Errorf("VerifyAndReceive: DeliveryFrom = %+v", info)
	}
	if _, ok := DeliveryFrom(context.Background()); ok {
		t.Error("DeliveryFrom of a bare context reports a delivery")
	}
}

// TestOnResult checks that OnResult is called once per request, with the
// status answered and the handlers' error, also for a 202 of the timeout.
func TestOnResult(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			results := make(chan Result, 16)
			f := newFixture(t, MiddlewareOptions{Timeout: 200 * time.Millisecond, OnResult: func(r Result) { results <- r }})
			_ = f
			cases := []struct {
				name   string
				rq     req
				status int
				err    bool
				ok     bool // verified
			}{
				{name: "handled", rq: req{}, status: 200, ok: true},
				{name: "failed", rq: req{header: http.Header{HeaderEvent: {"fail"}}}, status: 500, err: true, ok: true},
				{name: "mismatch", rq: req{signWith: "wrong"}, status: 400, err: true},
				{name: "not json", rq: req{header: http.Header{"Content-Type": {"text/plain"}}}, status: 415, err: true},
			}
			for _, c := range cases {
				res, _ := f.do(t, c.rq)
				r := <-results
				if r.Status != c.status || res.StatusCode != c.status || (r.Err != nil) != c.err || r.Verified != c.ok {
					t.Errorf("%s: Result status %d err %v verified %v; answered %d; want %d, error %v, verified %v", c.name, r.Status, r.Err, r.Verified, res.StatusCode, c.status, c.err, c.ok)
				}
				if c.ok && r.Action != "opened" {
					t.Errorf("%s: Action %q, want opened", c.name, r.Action)
				}
			}
			// A 202 of the timeout is reported when the handlers return.
			res, _ := f.do(t, req{header: http.Header{HeaderEvent: {"slow"}}})
			if res.StatusCode != http.StatusAccepted {
				t.Fatalf("slow delivery answered %d, want 202", res.StatusCode)
			}
			select {
			case r := <-results:
				t.Fatalf("reported before its handlers returned: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			close(f.release)
			r := <-results
			if r.Status != http.StatusAccepted || r.Err != nil || r.Duration < 200*time.Millisecond {
				t.Errorf("slow delivery: Result status %d err %v duration %v", r.Status, r.Err, r.Duration)
			}
			select {
			case r := <-results:
				t.Errorf("a second Result: %+v", r)
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// memInbox stores deliveries in memory for the middleware's side of Inbox;
// package inbox has the durable one.
type memInbox struct {
	mu   sync.Mutex
	ids  map[string]bool
	fail error
}

func (b *memInbox) Enqueue(ctx context.Context, d Delivery) (EnqueueResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return 0, b.fail
	}
	// The Inbox contract: a body that is not one JSON object is refused.
	if _, err := jsonscan.Scan(d.Payload); err != nil {
		return 0, jsonscan.InvalidPayload(ErrInvalidPayload, d.Name, d.ID, err)
	}
	if b.ids[d.ID] {
		return Duplicate, nil
	}
	b.ids[d.ID] = true
	return Enqueued, nil
}

// TestInboxResults checks the Results of an inbox's answers: stored,
// duplicate (Duplicate set), not stored.
func TestInboxResults(t *testing.T) {
	box := &memInbox{ids: map[string]bool{}}
	results := make(chan Result, 4)
	f := newFixture(t, MiddlewareOptions{Inbox: box, OnResult: func(r Result) { results <- r }})
	for _, want := range []struct {
		status    int
		duplicate bool
	}{{http.StatusAccepted, false}, {http.StatusOK, true}} {
		f.do(t, req{})
		r := <-results
		if r.Status != want.status || r.Duplicate != want.duplicate || r.Err != nil || !r.Verified {
			t.Errorf("Result status %d duplicate %v err %v verified %v; want %d, %v, nil, true", r.Status, r.Duplicate, r.Err, r.Verified, want.status, want.duplicate)
		}
	}
}

// TestMiddlewareInbox checks the answers with an Inbox: 202 when stored, 200
// for a duplicate, 503 with Retry-After when not stored, 400 for a body that
// is not a JSON object; no handler runs in the request.
func TestMiddlewareInbox(t *testing.T) {
	box := &memInbox{ids: map[string]bool{}}
	f := newFixture(t, MiddlewareOptions{Inbox: box})
	res, body := f.do(t, req{})
	if res.StatusCode != http.StatusAccepted || body != "queued\n" {
		t.Errorf("first: %d %q, want 202 queued", res.StatusCode, body)
	}
	res, body = f.do(t, req{})
	if res.StatusCode != http.StatusOK || body != "duplicate\n" {
		t.Errorf("again: %d %q, want 200 duplicate", res.StatusCode, body)
	}
	res, _ = f.do(t, req{body: `[1]`, header: http.Header{HeaderDelivery: {"array"}}})
	if res.StatusCode != http.StatusBadRequest || box.ids["array"] {
		t.Errorf("array body: %d, stored %v; want 400, not stored", res.StatusCode, box.ids["array"])
	}
	box.mu.Lock()
	box.fail = errors.New("stream unavailable")
	box.mu.Unlock()
	res, body = f.do(t, req{header: http.Header{HeaderDelivery: {"other"}}})
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("inbox failing: %d %q Retry-After %q, want 503 with Retry-After", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if n := f.ran.Load(); n != 0 {
		t.Errorf("%d handlers ran in the request; with an inbox none does", n)
	}
}

// TestDeliveryFromPayload checks that handlers' contexts carry their
// delivery's id, name and body as received, through the Middleware,
// VerifyAndReceive and Receive, and that a Transform does not change what
// DeliveryFrom returns; and that Receive keeps the Delivery its context
// carries for the same delivery (an inbox's attempt) and no other.
func TestDeliveryFromPayload(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Transform: func(_ context.Context, e emitter.Event) (emitter.Event, error) {
		e.Payload = []byte(`{"transformed":true}`)
		return e, nil
	}})
	got := make(chan Delivery, 1)
	wh.On("ping", func(ctx context.Context, e emitter.Event) error {
		d, ok := DeliveryFrom(ctx)
		if !ok {
			return errors.New("no delivery in the handler's context")
		}
		if string(e.Payload) != `{"transformed":true}` {
			return errors.New("the Transform did not run")
		}
		got <- d
		return nil
	})
	srv := startServer(t, NewMiddleware(wh, MiddlewareOptions{}), false)
	res, err := srv.Client().Do(delivery(t, context.Background(), srv, "ping"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if d := <-got; d.ID != "d-ping" || d.Name != "ping" || len(d.Payload) == 0 || string(d.Payload) == `{"transformed":true}` || d.Signature == "" {
		t.Errorf("Middleware: DeliveryFrom = %q %q %q %q", d.ID, d.Name, d.Payload, d.Signature)
	}
	body := []byte(`{"zen":"ok","installation":{"id":7}}`)
	if err := wh.VerifyAndReceive(context.Background(), Delivery{ID: "x", Name: "ping", Payload: body, Signature: sign(t, secret, body), Tenant: "t"}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d.ID != "x" || d.Name != "ping" || string(d.Payload) != string(body) || d.Tenant != "t" || d.Attempt != 1 {
		t.Errorf("VerifyAndReceive: DeliveryFrom = %+v", d)
	}
	if err := wh.Receive(context.Background(), emitter.Event{ID: "y", Name: "ping", Payload: body}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d.ID != "y" || string(d.Payload) != string(body) || d.Attempt != 1 {
		t.Errorf("Receive: DeliveryFrom = %+v", d)
	}

	// An inbox's attempt: the context's Delivery is kept, with e's body.
	hdr := http.Header{"Traceparent": {"00-1-2-01"}}
	ctx := ContextWithDelivery(context.Background(), Delivery{ID: "z", Name: "ping", Header: hdr, Attempt: 3, Tenant: "acme"})
	if err := wh.Receive(ctx, emitter.Event{ID: "z", Name: "ping", Payload: body}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d.ID != "z" || d.Attempt != 3 || d.Tenant != "acme" || d.Header.Get("Traceparent") == "" || string(d.Payload) != string(body) {
		t.Errorf("Receive under a stored delivery's context: DeliveryFrom = %+v", d)
	}
	// Another delivery dispatched under that context is not mistaken for it.
	if err := wh.Receive(ctx, emitter.Event{ID: "other", Name: "ping", Payload: body}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d.ID != "other" || d.Attempt != 1 || d.Tenant != "" || d.Header != nil {
		t.Errorf("Receive of another delivery: DeliveryFrom = %+v", d)
	}
	if _, ok := DeliveryFrom(context.Background()); ok {
		t.Error("DeliveryFrom of a bare context reports a delivery")
	}
}
