package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// post sends a signed delivery and returns the status and body of the answer.
func post(t testing.TB, client *http.Client, url, event, id string, body []byte) (int, string) {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, event)
	r.Header.Set(HeaderDelivery, id)
	r.Header.Set(HeaderSignature, sign(t, secret, body))
	res, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestShutdownFinishesAcknowledgedDeliveries: a graceful shutdown
// (http.Server.Shutdown, then Close) returns only after the handlers of every
// delivery answered 200 or 202 have returned — those that outlived their
// request's 202, and one whose request is still waiting for its answer.
func TestShutdownFinishesAcknowledgedDeliveries(t *testing.T) {
	const acked = 8
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	gate := make(chan struct{})
	var finished atomic.Int32
	wh.On("slow", func(ctx context.Context, e emitter.Event) error {
		<-gate
		finished.Add(1)
		return nil
	})
	started := make(chan struct{}, 1)
	wh.On("waiting", func(ctx context.Context, e emitter.Event) error {
		started <- struct{}{}
		<-gate
		finished.Add(1)
		return nil
	})
	wh.On("fast", func(ctx context.Context, e emitter.Event) error {
		finished.Add(1)
		return nil
	})
	mux := http.NewServeMux()
	mux.Handle("/ack", NewMiddleware(wh, MiddlewareOptions{Path: "/ack", Timeout: time.Nanosecond}))
	mux.Handle("/wait", NewMiddleware(wh, MiddlewareOptions{Path: "/wait", Timeout: -1}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: generous}

	if code, _ := post(t, client, base+"/wait", "fast", "f", []byte(`{}`)); code != 200 {
		t.Fatalf("fast delivery: %d", code)
	}
	for i := range acked {
		if code, body := post(t, client, base+"/ack", "slow", fmt.Sprint("s", i), []byte(`{}`)); code != http.StatusAccepted {
			t.Fatalf("slow delivery: %d %q, want 202", code, body)
		}
	}
	waited := make(chan int, 1)
	go func() {
		code, _ := post(t, client, base+"/wait", "waiting", "w", []byte(`{}`))
		waited <- code
	}()
	<-started

	type result struct {
		finished int32
		err      error
	}
	shut := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), generous)
		defer cancel()
		err := errors.Join(srv.Shutdown(ctx), wh.Close(ctx))
		shut <- result{finished.Load(), err}
	}()
	// Every handler but the fast one is blocked, so a shutdown that does not
	// wait returns now; one that waits returns only once the gate opens.
	select {
	case r := <-shut:
		t.Fatalf("shutdown returned (err %v) while %d acknowledged deliveries' handlers were blocked", r.err, acked+1+1-r.finished)
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	r := <-shut
	if r.err != nil {
		t.Fatalf("shutdown: %v", r.err)
	}
	if want := int32(acked + 2); r.finished != want {
		t.Errorf("%d handlers had finished when shutdown returned, want %d", r.finished, want)
	}
	if code := <-waited; code != 200 {
		t.Errorf("the delivery whose request waited during shutdown got %d, want 200", code)
	}
}

// TestNo202ForADeliveryCloseCanMiss: a 202 can be written before the goroutine
// that dispatches the delivery has started. Close must still wait for that
// delivery's handlers (it once returned at once, and Receive then refused the
// delivery as closed: acknowledged, never handled). Each round is a race the
// old code lost a few times in a hundred.
func TestNo202ForADeliveryCloseCanMiss(t *testing.T) {
	const rounds = 200
	body := []byte(`{"action":"opened"}`)
	acked := 0
	for i := range rounds {
		wh, err := New(Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Bool
		wh.OnAny(func(context.Context, emitter.Event) error { ran.Store(true); return nil })
		srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Timeout: time.Nanosecond}))
		code, _ := post(t, srv.Client(), srv.URL+DefaultPath, "issues", fmt.Sprint(i), body)
		ctx, cancel := context.WithTimeout(context.Background(), generous)
		err = wh.Close(ctx)
		cancel()
		srv.Close()
		if err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if code == http.StatusAccepted || code == http.StatusOK {
			acked++
			if !ran.Load() {
				t.Fatalf("round %d: answered %d, and Close returned without the handler having run", i, code)
			}
		}
	}
	if acked == 0 {
		t.Fatal("no delivery was acknowledged")
	}
}

// TestCloseRefusesNewDeliveries: from the moment Close is called, new
// deliveries are answered 503 with Retry-After and not dispatched, even while
// Close still waits for others.
func TestCloseRefusesNewDeliveries(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	if code, _ := post(t, client, url, "never", "n", []byte(`{}`)); code != http.StatusAccepted {
		t.Fatalf("got %d, want 202", code)
	}
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), generous)
		defer cancel()
		closed <- h.wh.Close(ctx)
	}()
	// Close has been called once a delivery is refused; until then they may
	// still be taken (and run: they are "issues", which returns at once).
	deadline := time.Now().Add(generous)
	var refused string
	for {
		res, body := doRaw(t, client, url, "issues", []byte(`{}`))
		if res.StatusCode == http.StatusServiceUnavailable {
			refused = res.Request.Header.Get(HeaderDelivery)
			if body != `{"error":"Shutting down: not accepting deliveries"}` || res.Header.Get("Retry-After") != fmt.Sprint(RetryAfter) {
				t.Errorf("503 with body %q, Retry-After %q", body, res.Header.Get("Retry-After"))
			}
			break
		}
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted || time.Now().After(deadline) {
			t.Fatalf("got %d %q while closing", res.StatusCode, body)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a handler was blocked", err)
	default:
	}
	close(h.release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, ran := h.ids.Load(refused); ran {
		t.Errorf("the refused delivery %q ran a handler", refused)
	}
}

// TestCloseExpired: a Close whose context ends first reports it, and the
// Webhooks is closed all the same.
func TestCloseExpired(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	if code, _ := post(t, client, url, "never", "n", []byte(`{}`)); code != http.StatusAccepted {
		t.Fatalf("got %d, want 202", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.wh.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled) = %v", err)
	}
	if err := h.wh.Receive(context.Background(), emitter.Event{Name: "x", Payload: []byte(`{}`)}); !errors.Is(err, emitter.ErrClosed) {
		t.Errorf("Receive after Close = %v, want ErrClosed", err)
	}
	res, _ := doRaw(t, client, url, "issues", []byte(`{}`))
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("delivery after Close: %d", res.StatusCode)
	}
}

var deliveryIDs atomic.Int64

// doRaw is post with a fresh delivery id, returning the response too.
func doRaw(t testing.TB, client *http.Client, url, event string, body []byte) (*http.Response, string) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, event)
	r.Header.Set(HeaderDelivery, fmt.Sprint("d-", deliveryIDs.Add(1)))
	r.Header.Set(HeaderSignature, sign(t, secret, body))
	res, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, strings.TrimSpace(string(b))
}

// TestCloseLogsAbandoned: deliveries whose handlers still run when Close's
// deadline passes are logged with their ids.
func TestCloseLogsAbandoned(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	for _, id := range []string{"stuck-1", "stuck-2"} {
		if code, msg := post(t, client, url, "never", id, []byte(`{}`)); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", id, code, msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.wh.Close(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	logs := h.logs.text()
	for _, id := range []string{"stuck-1", "stuck-2"} {
		if !strings.Contains(logs, "delivery abandoned while its handlers ran delivery="+id) {
			t.Errorf("%s not logged as abandoned:\n%s", id, logs)
		}
	}
}
