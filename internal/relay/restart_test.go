package relay

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/proxy"
)

// proxyProc is a proxy that can be stopped and started again on one address, as
// a developer restarts `forgehooks proxy`.
type proxyProc struct {
	t    *testing.T
	addr string
	opts proxy.Options
	srv  *http.Server
	p    *proxy.Server
	done chan struct{}
}

func (pp *proxyProc) start() {
	pp.t.Helper()
	ln, err := net.Listen("tcp", pp.addr)
	if err != nil {
		pp.t.Fatal(err)
	}
	pp.addr = ln.Addr().String()
	pp.p, err = proxy.New(pp.opts)
	if err != nil {
		pp.t.Fatal(err)
	}
	pp.srv = &http.Server{Handler: pp.p}
	pp.done = make(chan struct{})
	go func() { pp.srv.Serve(ln); close(pp.done) }()
}

func (pp *proxyProc) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	proxy.Shutdown(ctx, pp.srv, pp.p)
	<-pp.done
}

// postClient opens a connection per request: the proxy restarts on the same
// address, and a POST on a kept-alive connection the stopped server closed
// fails rather than being retried.
var postClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (pp *proxyProc) post(body string) {
	pp.t.Helper()
	resp, err := postClient.Post("http://"+pp.addr+"/chan", "application/json", strings.NewReader(body))
	if err != nil {
		pp.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		pp.t.Fatalf("POST: %s", resp.Status)
	}
}

// relayProc runs Run with a gate on its reconnections: while held, the relay
// stays away, however long the test takes to post.
type relayProc struct {
	t      *testing.T
	got    chan *Message
	cancel context.CancelFunc
	done   chan struct{}
	lastID string

	mu        sync.Mutex
	gate      chan struct{}
	connected chan struct{}
}

// waitConnected waits for the relay's next connection.
func (rp *relayProc) waitConnected() {
	rp.t.Helper()
	select {
	case <-rp.connected:
	case <-time.After(testTimeout):
		rp.t.Fatal("relay did not reconnect")
	}
}

func startRelay(t *testing.T, source, lastID string) *relayProc {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	rp := &relayProc{t: t, got: make(chan *Message, 100), cancel: cancel, done: make(chan struct{}), gate: make(chan struct{})}
	close(rp.gate)
	connected := make(chan struct{}, 10)
	rp.connected = connected
	go func() {
		defer close(rp.done)
		err := Run(ctx, Options{
			Source:      source,
			LastEventID: lastID,
			Handle: func(_ context.Context, m *Message) error {
				rp.got <- m
				return nil
			},
			OnConnect: func() { connected <- struct{}{} },
			wait: func(ctx context.Context, d time.Duration) bool {
				rp.mu.Lock()
				g := rp.gate
				rp.mu.Unlock()
				select {
				case <-g:
					// Let a relay that is retrying a stopped proxy breathe.
					return sleep(ctx, 5*time.Millisecond)
				case <-ctx.Done():
					return false
				}
			},
		})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("relay did not connect")
	}
	return rp
}

func (rp *relayProc) hold() {
	rp.mu.Lock()
	rp.gate = make(chan struct{})
	rp.mu.Unlock()
}

func (rp *relayProc) release() {
	rp.mu.Lock()
	close(rp.gate)
	rp.mu.Unlock()
}

func (rp *relayProc) stop() {
	rp.cancel()
	<-rp.done
}

func (rp *relayProc) expect(bodies ...string) {
	rp.t.Helper()
	for _, want := range bodies {
		select {
		case m := <-rp.got:
			if string(m.Body) != want {
				rp.t.Fatalf("relay got %q, want %q", m.Body, want)
			}
			rp.lastID = m.EventID
		case <-time.After(testTimeout):
			rp.t.Fatalf("relay did not get %q", want)
		}
	}
}

// TestProxyRestartReplay: with a journal, deliveries sent while the relay is
// away, because the proxy restarted, are replayed when it comes back, and so are
// those sent before the restart to a relay that was already away. Without one,
// the restarted proxy did not issue the relay's last id, so it replays nothing:
// the relay gets the deliveries that come once it is back.
func TestProxyRestartReplay(t *testing.T) {
	for _, journal := range []bool{false, true} {
		name := "memory"
		if journal {
			name = "journal"
		}
		t.Run(name, func(t *testing.T) {
			pp := &proxyProc{t: t, addr: "127.0.0.1:0", opts: proxy.Options{Retry: 10 * time.Millisecond, AllowNamedChannels: true}}
			if journal {
				pp.opts.JournalDir = t.TempDir()
			}
			pp.start()
			source := "http://" + pp.addr + "/chan"
			rp := startRelay(t, source, "")
			pp.post(`{"n":1}`)
			rp.expect(`{"n":1}`)

			// The proxy restarts; the relay is held away until after two
			// deliveries reached the new proxy.
			rp.hold()
			pp.stop()
			pp.start()
			pp.post(`{"n":2}`)
			pp.post(`{"n":3}`)
			rp.release()
			if journal {
				rp.expect(`{"n":2}`, `{"n":3}`)
			} else {
				rp.waitConnected()
			}
			pp.post(`{"n":4}`)
			rp.expect(`{"n":4}`) // and nothing twice before it

			if journal {
				// The relay goes away, a delivery comes, the proxy restarts,
				// another comes; the relay comes back with its last id.
				rp.stop()
				last := rp.lastID
				pp.post(`{"n":5}`)
				pp.stop()
				pp.start()
				pp.post(`{"n":6}`)
				rp = startRelay(t, source, last)
				rp.expect(`{"n":5}`, `{"n":6}`)
			}
			rp.stop()
			pp.stop()
		})
	}
}
