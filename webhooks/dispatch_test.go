package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// The ways a delivery's handlers are run: on the request's goroutine over
// HTTP/1 (a timer writes the 202), or on another goroutine while the request's
// waits, over HTTP/2 and for a writer that cannot flush.
var protocols = []struct {
	name    string
	http2   bool
	handoff bool // the handlers run on another goroutine
}{
	{name: "http1", http2: false, handoff: false},
	{name: "http2", http2: true, handoff: true},
}

// startServer serves h on 127.0.0.1, over HTTP/2 (TLS) or HTTP/1.1.
func startServer(t *testing.T, h http.Handler, http2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if http2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// delivery returns a signed delivery of event to srv's DefaultPath.
func delivery(t *testing.T, ctx context.Context, srv *httptest.Server, event string) *http.Request {
	t.Helper()
	body := []byte(`{"action":"opened"}`)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+DefaultPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, event)
	r.Header.Set(HeaderDelivery, "d-"+event)
	r.Header.Set(HeaderSignature, sign(t, secret, body))
	return r
}

// TestTimeoutAnswersWhileHandlersRun checks that the 202 reaches the client
// while the handlers still run, however they are run, and that over HTTP/1 it
// closes the connection, whose handler has not returned.
func TestTimeoutAnswersWhileHandlersRun(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
			release := make(chan struct{})
			var finished atomic.Bool
			wh.On("issues", func(ctx context.Context, e emitter.Event) error {
				<-release
				finished.Store(true)
				return nil
			})
			srv := startServer(t, NewMiddleware(wh, MiddlewareOptions{Timeout: 20 * time.Millisecond}), p.http2)
			res, err := srv.Client().Do(delivery(t, context.Background(), srv, "issues"))
			if err != nil {
				close(release)
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusAccepted || string(body) != "still processing\n" {
				close(release)
				t.Fatalf("got %d %q, %v; want 202 %q", res.StatusCode, body, err, "still processing\n")
			}
			if finished.Load() {
				t.Fatal("the handler had returned before the 202 was read")
			}
			if wantClose := !p.http2; res.Close != wantClose {
				t.Errorf("Connection: close = %v, want %v", res.Close, wantClose)
			}
			if want := "HTTP/1.1"; !p.http2 && res.Proto != want || p.http2 && res.ProtoMajor != 2 {
				t.Errorf("served over %s", res.Proto)
			}
			close(release)
			if err := wh.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !finished.Load() {
				t.Fatal("Close returned before the handler")
			}
		})
	}
}

// plainWriter is an http.ResponseWriter that cannot flush.
type plainWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *plainWriter) Header() http.Header         { return w.header }
func (w *plainWriter) WriteHeader(code int)        { w.code = code }
func (w *plainWriter) Write(b []byte) (int, error) { return w.body.Write(b) }

// TestTimeoutWithWriterThatCannotFlush checks that ServeHTTP returns with the
// 202 at the timeout when its writer cannot flush (so that the answer is not
// held until the handlers return), and that canFlush sees through Unwrap.
func TestTimeoutWithWriterThatCannotFlush(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	release := make(chan struct{})
	defer close(release)
	wh.On("issues", func(ctx context.Context, e emitter.Event) error {
		<-release
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{Timeout: 20 * time.Millisecond})
	body := []byte(`{"action":"opened"}`)
	r := httptest.NewRequest(http.MethodPost, DefaultPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(HeaderEvent, "issues")
	r.Header.Set(HeaderDelivery, "d")
	r.Header.Set(HeaderSignature, sign(t, secret, body))
	w := &plainWriter{header: http.Header{}}
	if canFlush(w) {
		t.Fatal("canFlush(plainWriter) = true")
	}
	if !canFlush(unwrapper{httptest.NewRecorder()}) {
		t.Fatal("canFlush does not look through Unwrap")
	}
	returned := make(chan struct{})
	go func() {
		m.ServeHTTP(w, r)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeHTTP still waits for a blocked handler")
	}
	if w.code != http.StatusAccepted || w.body.String() != "still processing\n" {
		t.Fatalf("got %d %q", w.code, w.body.String())
	}
}

type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// TestTimeoutRacesHandlers runs deliveries whose handlers return around the
// timeout, so that the timer and the handlers race to answer: each delivery
// must get exactly one whole answer, 200 or 202, and a 202 only with its log.
// Run with -race.
func TestTimeoutRacesHandlers(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			logs := &logRecords{}
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(logs)})
			var n atomic.Int64
			wh.On("issues", func(ctx context.Context, e emitter.Event) error {
				time.Sleep(time.Duration(n.Add(1)%5) * 500 * time.Microsecond)
				return nil
			})
			srv := startServer(t, NewMiddleware(wh, MiddlewareOptions{Timeout: time.Millisecond}), p.http2)
			codes := map[int]int{}
			for range 100 {
				res, err := srv.Client().Do(delivery(t, context.Background(), srv, "issues"))
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				switch {
				case err != nil:
					t.Fatal(err)
				case res.StatusCode == http.StatusOK && string(body) == "ok\n",
					res.StatusCode == http.StatusAccepted && string(body) == "still processing\n":
					codes[res.StatusCode]++
				default:
					t.Fatalf("got %d %q", res.StatusCode, body)
				}
			}
			if err := wh.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(logs.text(), "answered 202"); got != codes[http.StatusAccepted] {
				t.Errorf("%d answers 202, %d logged", codes[http.StatusAccepted], got)
			}
			t.Logf("answers: %v", codes)
		})
	}
}

// TestMiddlewareClientGoesAway checks that a client that gives up does not
// cancel the handlers' context, and that it is logged: at once when the
// handlers run on another goroutine, when they return otherwise.
func TestMiddlewareClientGoesAway(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			logs := &logRecords{notify: make(chan string, 16)}
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(logs)})
			started := make(chan struct{})
			release := make(chan struct{})
			handlerErr := make(chan error, 1)
			wh.On("issues", func(ctx context.Context, e emitter.Event) error {
				close(started)
				<-release
				handlerErr <- ctx.Err()
				return nil
			})
			m := NewMiddleware(wh, MiddlewareOptions{Timeout: time.Minute})
			reqCtx := make(chan context.Context, 1)
			srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reqCtx <- r.Context()
				m.ServeHTTP(w, r)
			}), p.http2)
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			if _, err := srv.Client().Do(delivery(t, ctx, srv, "issues")); !errors.Is(err, context.Canceled) {
				t.Fatalf("client err = %v", err)
			}
			if !p.handoff {
				// Logged when the handlers return, if the server has seen the
				// client go by then.
				<-(<-reqCtx).Done()
				close(release)
			}
			for msg := range logs.notify {
				if strings.Contains(msg, "client went away") {
					break
				}
			}
			if p.handoff {
				close(release)
			}
			if err := <-handlerErr; err != nil {
				t.Fatalf("handler's context was cancelled with the request: %v", err)
			}
		})
	}
}

// panickyFlusher claims to flush but panics, as a wrapper that asserts a
// Flusher its writer is not.
type panickyFlusher struct{ http.ResponseWriter }

func (panickyFlusher) Flush() { panic("not a flusher") }

// TestTimeoutAnswerPanics checks that a writer panicking while the timer writes
// the 202 is logged and leaves the handlers, and the process, running.
func TestTimeoutAnswerPanics(t *testing.T) {
	logs := &logRecords{}
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(logs)})
	release := make(chan struct{})
	finished := make(chan struct{})
	wh.On("issues", func(ctx context.Context, e emitter.Event) error {
		<-release
		close(finished)
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{Timeout: 10 * time.Millisecond})
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.ServeHTTP(panickyFlusher{w}, r)
	}), false)
	go func() {
		for !strings.Contains(logs.text(), "writing the 202 panicked") {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	res, err := srv.Client().Do(delivery(t, context.Background(), srv, "issues"))
	if err == nil {
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	<-finished
	if err := wh.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
