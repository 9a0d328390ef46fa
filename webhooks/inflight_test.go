package webhooks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// TestMaxInFlight: handlers that never return hold at most MaxInFlight
// deliveries; past it a verified delivery is answered 503 with Retry-After and
// not dispatched, and the log says so. Requests that fail before dispatch
// (forged, invalid) take no place and get their usual answers.
func TestMaxInFlight(t *testing.T) {
	const max = 3
	h := newHostile(t, MiddlewareOptions{MaxInFlight: max, Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	for i := range max {
		if code, body := post(t, client, url, "never", fmt.Sprint("n", i), []byte(`{}`)); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d %q, want 202", i, code, body)
		}
	}
	if got := h.mw.InFlight(); got != max {
		t.Fatalf("InFlight = %d, want %d", got, max)
	}
	// With a timeout of 1ns the 202 may come before the handlers start.
	deadline := time.Now().Add(generous)
	for h.runs.Load() != max {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handlers started", h.runs.Load(), max)
		}
		time.Sleep(time.Millisecond)
	}
	runs := h.runs.Load()

	res, body := doRaw(t, client, url, "issues", []byte(`{"action":"opened"}`))
	if res.StatusCode != http.StatusServiceUnavailable || body != `{"error":"Too many deliveries in progress: try again later"}` {
		t.Fatalf("past the bound: %d %q", res.StatusCode, body)
	}
	if ra := res.Header.Get("Retry-After"); ra != fmt.Sprint(RetryAfter) {
		t.Errorf("Retry-After %q", ra)
	}
	logs := h.logs.text()
	if !strings.Contains(logs, "WARN webhooks: rejected request: too many deliveries in flight") || !strings.Contains(logs, fmt.Sprintf("in_flight=%d max_in_flight=%d", max, max)) {
		t.Errorf("the refusal is not logged with the bound:\n%s", logs)
	}
	// Places 1 of 3 taken: info; 2 and 3 of 3: a warning.
	for _, want := range []string{
		"INFO webhooks: handlers still running; answered 202 delivery=n0 event=never timeout=1ns in_flight=1 max_in_flight=3",
		"WARN webhooks: handlers still running; answered 202 delivery=n1 event=never timeout=1ns in_flight=2 max_in_flight=3",
		"WARN webhooks: handlers still running; answered 202 delivery=n2 event=never timeout=1ns in_flight=3 max_in_flight=3",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}

	// What fails before the signature is verified is answered as usual. (A
	// validly signed body that is not a JSON object is refused by Receive, so
	// with every place taken it gets the 503.)
	for _, tt := range []struct {
		req  hreq
		want int
	}{
		{hreq{sig: validSig([]byte(`{"other":1}`))}, http.StatusBadRequest},
		{hreq{headers: []string{HeaderEvent, "<del>"}}, http.StatusBadRequest},
		{hreq{headers: []string{"Content-Type", "text/plain"}}, http.StatusUnsupportedMediaType},
		{hreq{body: []byte(`[]`)}, http.StatusServiceUnavailable},
	} {
		if got := h.roundTrip(t, tt.req.build(), "POST", nil)[0].StatusCode; got != tt.want {
			t.Errorf("with every place taken, a request that is not a delivery got %d, want %d", got, tt.want)
		}
	}
	if got := h.runs.Load(); got != runs {
		t.Errorf("%d handler runs for refused requests", got-runs)
	}

	// Once the handlers return, the places are free again.
	close(h.release)
	for h.mw.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("InFlight stays %d after the handlers returned", h.mw.InFlight())
		}
		time.Sleep(time.Millisecond)
	}
	if code, body := post(t, client, url, "issues", "after", []byte(`{}`)); code != http.StatusOK && code != http.StatusAccepted {
		t.Errorf("after the handlers returned: %d %q", code, body)
	}
}

func TestMaxInFlightOptions(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	for _, tt := range []struct {
		opt  int
		want int64
	}{
		{0, DefaultMaxInFlight},
		{1, 1},
		{5000, 5000},
		{-1, 0}, // no bound
	} {
		if got := NewMiddleware(wh, MiddlewareOptions{MaxInFlight: tt.opt}).maxInFlight; got != tt.want {
			t.Errorf("MaxInFlight %d: bound %d, want %d", tt.opt, got, tt.want)
		}
	}
}

// TestNoBound: a negative MaxInFlight accepts however many.
func TestNoBound(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{MaxInFlight: -1, Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	for i := range 20 {
		if code, _ := post(t, client, url, "never", fmt.Sprint(i), []byte(`{}`)); code != http.StatusAccepted {
			t.Fatalf("delivery %d: %d", i, code)
		}
	}
	if h.mw.InFlight() != 20 {
		t.Errorf("InFlight = %d", h.mw.InFlight())
	}
}

// slowRequest starts a delivery that announces a body of n bytes and sends only
// its first byte, then returns the connection.
func slowRequest(t *testing.T, addr string, n int) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, generous)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: issues\r\n%s: slow\r\n%s: %s\r\nContent-Length: %d\r\n\r\n{",
		DefaultPath, HeaderEvent, HeaderDelivery, HeaderSignature, validSig([]byte(`{}`)), n)
	return conn
}

// TestSlowBodyHoldsNoPlace: a request whose body trickles in holds no place
// among MaxInFlight while it is read: with one place, a delivery gets through
// beside it.
func TestSlowBodyHoldsNoPlace(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	reading := make(chan struct{}, 1)
	mw := NewMiddleware(wh, MiddlewareOptions{MaxInFlight: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderDelivery) == "slow" {
			reading <- struct{}{}
		}
		mw.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	var ran atomic.Int32
	wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })

	slowRequest(t, ln.Addr().String(), 1000) // never finished
	<-reading
	client := &http.Client{Timeout: generous}
	if code, body := post(t, client, "http://"+ln.Addr().String()+DefaultPath, "issues", "fast", []byte(`{}`)); code != http.StatusOK {
		t.Fatalf("beside a slow body: %d %q", code, body)
	}
	if mw.InFlight() != 0 || ran.Load() != 1 {
		t.Errorf("InFlight %d, handler runs %d; want 0 and 1", mw.InFlight(), ran.Load())
	}
}

// TestReadTimeoutCutsSlowBody: behind an http.Server with a ReadTimeout (as
// the serve command sets), a body sent a byte at a time is cut off: the
// request ends with 400 or a closed connection, no handler runs, and no place
// is held. Without the timeout the body (a megabyte at a byte every 20 ms)
// would take hours.
func TestReadTimeoutCutsSlowBody(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	var ran atomic.Int32
	wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })
	mw := NewMiddleware(wh, MiddlewareOptions{MaxInFlight: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mw, ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond}
	go srv.Serve(ln)
	defer srv.Close()

	conn := slowRequest(t, ln.Addr().String(), 1<<20)
	conn.SetReadDeadline(time.Now().Add(generous))
	answered := make(chan string, 1)
	go func() {
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- "closed: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		answered <- fmt.Sprintf("%d %s", res.StatusCode, b)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(generous)
	var got string
trickle:
	for {
		select {
		case got = <-answered:
			break trickle
		case <-tick.C:
			conn.Write([]byte(" ")) // errors once the server has closed
		case <-deadline:
			t.Fatal("the slow body was not cut off")
		}
	}
	if got != `400 {"error":"Could not read the request body"}` && !strings.HasPrefix(got, "closed: ") {
		t.Errorf("slow body answered %q", got)
	}
	if ran.Load() != 0 || mw.InFlight() != 0 {
		t.Errorf("handler runs %d, InFlight %d", ran.Load(), mw.InFlight())
	}

	// Headers that trickle in are cut off by ReadHeaderTimeout.
	hc, err := net.DialTimeout("tcp", ln.Addr().String(), generous)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hc.SetReadDeadline(time.Now().Add(generous))
	closed := make(chan struct{})
	go func() {
		// net/http closes without a word (a reset, when a byte we sent is
		// still unread), or answers 408: all are the end.
		io.ReadAll(hc)
		close(closed)
	}()
	fmt.Fprintf(hc, "POST %s HTTP/1.1\r\n", DefaultPath)
	for done := false; !done; {
		select {
		case <-closed:
			done = true
		case <-tick.C:
			hc.Write([]byte("X"))
		case <-deadline:
			t.Fatal("slow headers were not cut off")
		}
	}
}
