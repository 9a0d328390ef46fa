package receiver_test

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
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const secret = "receiver-test-secret-0123456789"

func newWebhooks(t *testing.T) *webhooks.Webhooks {
	t.Helper()
	wh, err := webhooks.New(webhooks.Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

func TestNewChecksOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  receiver.Options
		field string
	}{
		{"no webhooks", receiver.Options{}, "Webhooks"},
		{"port out of range", receiver.Options{Addr: "127.0.0.1:99999"}, "Addr"},
		{"no port", receiver.Options{MetricsAddr: "9090"}, "MetricsAddr"},
		{"not a URL", receiver.Options{Forward: "notaurl"}, "Forward"},
		{"ftp", receiver.Options{Forward: "ftp://127.0.0.1/x"}, "Forward"},
		{"forward port", receiver.Options{Forward: "http://127.0.0.1:0/x"}, "Forward"},
		{"page off loopback without token", receiver.Options{Inspector: &inspector.Options{}, InspectorAddr: "0.0.0.0:3001"}, "InspectorAddr"},
		{"negative catch-up", receiver.Options{CatchupEvery: -time.Second}, "CatchupEvery"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.field != "Webhooks" {
				tc.opts.Webhooks = newWebhooks(t)
			}
			_, err := receiver.New(context.Background(), tc.opts)
			var oe *receiver.OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(err.Error(), "Options."+tc.field) {
				t.Errorf("New: %v, want an OptionError for %s", err, tc.field)
			}
		})
	}
}

// TestRunServesAndDrains runs a Receiver on its own addresses: deliveries
// are stored and handled, the page lists them from the inbox, the metrics
// count them, and cancelling drains (the inbox refuses afterwards).
func TestRunServesAndDrains(t *testing.T) {
	t.Parallel()
	wh := newWebhooks(t)
	handled := make(chan string, 10)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { handled <- e.ID; return nil })
	addrs := map[string]string{}
	listening := make(chan struct{})
	r, err := receiver.New(context.Background(), receiver.Options{
		Webhooks: wh, Inbox: &inbox.Options{Dir: t.TempDir()}, Inspector: &inspector.Options{}, Metrics: &metrics.Options{},
		Addr: "127.0.0.1:0", InspectorAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler),
		OnListen: func(part, addr string) {
			addrs[part] = addr
			if len(addrs) == 3 {
				close(listening)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	body := []byte(`{"action":"opened","repository":{"full_name":"o/r"},"sender":{"login":"u"}}`)
	if code := post(t, "http://"+addrs["webhooks"]+webhooks.DefaultPath, "d-1", body); code != http.StatusAccepted {
		t.Fatalf("delivery: %d", code)
	}
	if id := <-handled; id != "d-1" {
		t.Fatalf("handled %q", id)
	}
	recs, err := r.Store().List(context.Background(), delivery.ListOptions{})
	if err != nil || len(recs) != 1 || recs[0].Repository != "o/r" || recs[0].Sender != "u" || recs[0].Payload != nil || recs[0].Size != int64(len(body)) {
		t.Errorf("List: %v %+v", err, recs)
	}
	if code, page := get(t, "http://"+addrs["inspector"]+"/api/deliveries"); code != 200 || !strings.Contains(page, `"repository":"o/r"`) {
		t.Errorf("page: %d %s", code, page)
	}
	if code, m := get(t, "http://"+addrs["metrics"]+"/metrics"); code != 200 || !strings.Contains(m, `forgehooks_deliveries_total{event="issues",status="202"} 1`) {
		t.Errorf("metrics: %d %s", code, m)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if _, err := r.Inbox().Enqueue(context.Background(), webhooks.Delivery{ID: "late", Name: "ping", Payload: []byte(`{}`)}); !errors.Is(err, inbox.ErrClosed) {
		t.Errorf("Enqueue after the drain: %v, want ErrClosed", err)
	}
}

// TestRunFailsOnBusyAddress: an address already taken stops Run before it
// serves anything, with the error, and closes what New opened.
func TestRunFailsOnBusyAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	r, err := receiver.New(context.Background(), receiver.Options{Webhooks: newWebhooks(t), Inbox: &inbox.Options{Dir: t.TempDir()},
		Addr: "127.0.0.1:0", Metrics: &metrics.Options{}, MetricsAddr: busy, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "metrics: cannot listen on "+busy) {
		t.Errorf("Run: %v", err)
	}
	if _, err := r.Inbox().Enqueue(context.Background(), webhooks.Delivery{ID: "x", Name: "ping", Payload: []byte(`{}`)}); !errors.Is(err, inbox.ErrClosed) {
		t.Errorf("the inbox is still open: %v", err)
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:3000/x", "https://h", "notaurl", "ftp://h", "http://h:0", "http://h:65536", "http://:80/", "http://[::1]:8080/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if receiver.CheckURL(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			t.Fatalf("accepted %q: %v %+v", s, err, u)
		}
		if _, err := http.NewRequest(http.MethodPost, s, nil); err != nil {
			t.Fatalf("accepted %q, which no request can be made to: %v", s, err)
		}
	})
}

func FuzzCheckListenAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:0", "127.0.0.1:99999", ":80", "9090", "[::1]:1", "h:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if receiver.CheckListenAddr(s) == nil && strings.Count(s, ":") == 0 {
			t.Fatalf("accepted %q without a port", s)
		}
	})
}

func post(t *testing.T, u, id string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	sig, _ := signing.Sign(secret, body)
	req.Header = http.Header{"Content-Type": {"application/json"}, webhooks.HeaderEvent: {"issues"}, webhooks.HeaderDelivery: {id}, webhooks.HeaderSignature: {sig}}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestDrainTimeoutRule: a positive DrainTimeout ends the drain with an error
// while a handler still runs; a negative one is no bound: Run waits for the
// handler.
func TestDrainTimeoutRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		waits   bool
	}{{"bounded", 50 * time.Millisecond, false}, {"no bound", -1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			wh := newWebhooks(t)
			started, release := make(chan struct{}), make(chan struct{})
			defer close(release)
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				close(started)
				<-release
				return nil
			})
			listening := make(chan string, 1)
			r, err := receiver.New(context.Background(), receiver.Options{
				Webhooks: wh, Addr: "127.0.0.1:0", DrainTimeout: tc.timeout,
				Middleware: webhooks.MiddlewareOptions{Timeout: 10 * time.Millisecond},
				Logger:     slog.New(slog.DiscardHandler),
				OnListen:   func(_, addr string) { listening <- addr },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			addr := <-listening
			if code := post(t, "http://"+addr+webhooks.DefaultPath, "d-1", []byte(`{}`)); code != http.StatusAccepted {
				t.Fatalf("delivery: %d, want 202 while the handler runs", code)
			}
			<-started
			cancel()
			select {
			case err := <-done:
				if tc.waits || err == nil {
					t.Fatalf("Run returned %v while the handler ran", err)
				}
			case <-time.After(500 * time.Millisecond):
				if !tc.waits {
					t.Fatal("Run did not return at its DrainTimeout")
				}
				release <- struct{}{}
				if err := <-done; err != nil {
					t.Fatalf("Run after the handler returned: %v", err)
				}
			}
		})
	}
}

// TestAnyPathLogs: the receiver mounted under a router's pattern with AnyPath
// takes the delivery and keeps its per-request log line.
func TestAnyPathLogs(t *testing.T) {
	t.Parallel()
	wh := newWebhooks(t)
	var logs syncLog
	r, err := receiver.New(context.Background(), receiver.Options{
		Webhooks: wh, Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	mux := http.NewServeMux()
	mux.Handle("POST /t/{tenant}/hooks", r.AnyPath())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	body := []byte(`{"action":"opened","repository":{"full_name":"o/r"},"sender":{"login":"u"}}`)
	if code := post(t, srv.URL+"/t/acme/hooks", "any-1", body); code != http.StatusOK {
		t.Fatalf("delivery under the pattern: %d, want 200", code)
	}
	if code := post(t, srv.URL+"/t/acme/hooks", "any-2", []byte(`{`)); code != http.StatusBadRequest {
		t.Fatalf("bad body: %d, want 400", code)
	}
	got := logs.String()
	for _, want := range []string{`msg="delivery ok" id=any-1`, `msg="delivery rejected" id=any-2`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

// syncLog is a log buffer safe for the server's goroutines.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestInboxLogLines: with an inbox whose workers run in this process, a
// stored delivery gets one line at info level, its run's "delivery
// handled" (id, event, tenant, attempt, duration, status); the store's
// "delivery stored" is at debug level. A duplicate keeps its info line.
func TestInboxLogLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level      slog.Level
		storeLines int // "delivery stored" lines per delivery
	}{
		{slog.LevelInfo, 0},
		{slog.LevelDebug, 1},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			t.Parallel()
			var logs syncLog
			addr := make(chan string, 1)
			r, err := receiver.New(context.Background(), receiver.Options{
				Webhooks: newWebhooks(t), Inbox: &inbox.Options{Dir: t.TempDir()}, Addr: "127.0.0.1:0",
				Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level})),
				OnListen: func(part, a string) { addr <- a },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			var hook string
			select {
			case a := <-addr:
				hook = "http://" + a + webhooks.DefaultPath
			case err := <-done:
				t.Fatalf("Run: %v", err)
			}
			const n = 3
			body := func(i int) []byte {
				// A body of its own: the replay guard answers one seen before as a duplicate.
				return fmt.Appendf(nil, `{"action":"opened","issue":{"number":%d},"repository":{"full_name":"o/r"},"sender":{"login":"u"}}`, i)
			}
			for i := range n {
				if code := post(t, hook, fmt.Sprint("log-", i), body(i)); code != http.StatusAccepted {
					t.Fatalf("delivery %d: %d", i, code)
				}
			}
			if code := post(t, hook, "log-0", body(0)); code != http.StatusOK {
				t.Fatalf("duplicate: %d", code)
			}
			deadline := time.Now().Add(30 * time.Second)
			for strings.Count(logs.String(), `msg="delivery handled"`) < n {
				if time.Now().After(deadline) {
					t.Fatalf("not every delivery handled in 30 s:\n%s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			got := logs.String()
			for i := range n {
				id := fmt.Sprint("log-", i)
				handled := regexp.MustCompile(`level=INFO msg="delivery handled" id=` + id +
					` event=issues.opened repository=o/r sender=u status=handled attempt=1 duration=\S+\n`)
				if c := len(handled.FindAllString(got, -1)); c != 1 {
					t.Errorf("%s: %d lines of its run, want 1:\n%s", id, c, got)
				}
				if c := strings.Count(got, `level=DEBUG msg="delivery stored" id=`+id+` `); c != tc.storeLines {
					t.Errorf("%s: %d lines of its store at debug level, want %d:\n%s", id, c, tc.storeLines, got)
				}
			}
			if c := strings.Count(got, `level=INFO msg="delivery stored"`); c != 0 {
				t.Errorf("%d store lines at info level, want none:\n%s", c, got)
			}
			if c := strings.Count(got, `level=INFO msg="duplicate delivery" id=log-0 `); c != 1 {
				t.Errorf("%d duplicate lines, want 1:\n%s", c, got)
			}
		})
	}
}
