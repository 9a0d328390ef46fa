package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

// TestRegisterWhileDeliveriesFlow registers and removes handlers of every kind
// (On, OnNames, OnAny, OnError) from several goroutines while deliveries flow
// over HTTP, under -race in `make test`. Handlers registered for the whole run
// see every delivery exactly once; handlers that come and go see each at most
// once; once the churn has stopped and every churning handler is removed, no
// delivery reaches one.
func TestRegisterWhileDeliveriesFlow(t *testing.T) {
	const (
		clients   = 4
		perClient = 40
		churners  = 3
	)
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	total := clients*perClient + 1
	var stable [3][]atomic.Int32 // issues.opened, issues, OnAny
	for i := range stable {
		stable[i] = make([]atomic.Int32, total)
	}
	churn := make([]atomic.Int32, total)
	var errsTold atomic.Int32
	id := func(e emitter.Event) int {
		i, err := strconv.Atoi(e.ID)
		if err != nil || i < 0 || i >= total {
			panic("bad delivery id " + e.ID)
		}
		return i
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error { stable[0][id(e)].Add(1); return nil })
	wh.On("issues", func(ctx context.Context, e emitter.Event) error { stable[1][id(e)].Add(1); return nil })
	wh.OnAny(func(ctx context.Context, e emitter.Event) error { stable[2][id(e)].Add(1); return nil })
	srv := newLocalServer(t, NewMiddleware(wh, MiddlewareOptions{}))
	client := &http.Client{Timeout: generous}

	stop := make(chan struct{})
	var churnWG sync.WaitGroup
	for g := range churners {
		churnWG.Add(1)
		go func() {
			defer churnWG.Done()
			// Each registration of this goroutine counts a delivery at most
			// once: its own handler, checked per registration.
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched() // leave the clients room on a small machine
				var seen sync.Map
				once := func(e emitter.Event) {
					if _, dup := seen.LoadOrStore(e.ID, true); dup {
						t.Errorf("a registration saw delivery %s twice", e.ID)
					}
					churn[id(e)].Add(1)
				}
				h := func(ctx context.Context, e emitter.Event) error { once(e); return nil }
				var name string
				var l *emitter.Listener
				switch (g + i) % 4 {
				case 0:
					name, l = "issues.opened", wh.On("issues.opened", h)
				case 1:
					name, l = "*", wh.OnAny(h)
				case 2:
					l = wh.OnNames([]string{"issues", "push"}, h)
				case 3:
					name, l = "error", wh.OnError(func(context.Context, *emitter.Error) { errsTold.Add(1) })
				}
				if name == "" {
					wh.RemoveListener("issues", l)
					wh.RemoveListener("push", l)
				} else if !wh.RemoveListener(name, l) {
					t.Errorf("RemoveListener(%q) found nothing", name)
				}
			}
		}()
	}

	var clientWG sync.WaitGroup
	for c := range clients {
		clientWG.Add(1)
		go func() {
			defer clientWG.Done()
			for k := range perClient {
				i := c*perClient + k
				if code, body := post(t, client, srv+DefaultPath, "issues", strconv.Itoa(i), []byte(`{"action":"opened"}`)); code != http.StatusOK {
					t.Errorf("delivery %d: %d %q", i, code, body)
				}
			}
		}()
	}
	clientWG.Wait()
	close(stop)
	churnWG.Wait()

	// Every churning handler is removed: the last delivery reaches none.
	last := total - 1
	if code, _ := post(t, client, srv+DefaultPath, "issues", strconv.Itoa(last), []byte(`{"action":"opened"}`)); code != http.StatusOK {
		t.Fatalf("last delivery: %d", code)
	}
	for i := range total {
		for k := range stable {
			if got := stable[k][i].Load(); got != 1 {
				t.Errorf("delivery %d reached stable handler %d %d times, want once", i, k, got)
			}
		}
	}
	var churned int32
	for i := range churn {
		churned += churn[i].Load()
	}
	t.Logf("churning handlers ran %d times during %d deliveries", churned, total)
	if got := churn[last].Load(); got != 0 {
		t.Errorf("a delivery after every churning handler was removed reached %d of them", got)
	}
	if errsTold.Load() != 0 {
		t.Errorf("error handlers told %d times, with no failure", errsTold.Load())
	}
}

// newLocalServer serves h on 127.0.0.1 until the test ends and returns its
// base URL.
func newLocalServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := &http.Server{Handler: h}
	ln, err := listenLocal()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("http://%s", ln.Addr())
}

func listenLocal() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
