package webhooks

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
)

// The load test's size. `make test` runs the small default; a bigger run:
//
//	go test ./webhooks -run 'TestLoad$' -count=1 -v -load.n=200000 -load.c=64
var (
	loadN       = flag.Int("load.n", 1000, "TestLoad: deliveries to send")
	loadC       = flag.Int("load.c", 16, "TestLoad: concurrent clients")
	loadTimeout = flag.Duration("load.timeout", 10*time.Minute, "TestLoad: the most the run may take before it fails")
	loadHeap    = flag.Int64("load.maxheap", 512<<20, "TestLoad: the most heap the run may use, in bytes")
)

// loadHandlers are the registrations of the load test, each with a counter
// per delivery.
var loadHandlers = []struct {
	names []string // nil: OnAny
}{
	{nil},
	{[]string{"issues"}},
	{[]string{"issues.opened"}},
	{[]string{"push"}},
	{[]string{"pull_request.opened", "pull_request.closed", "check_run"}},
}

// loadMatches reports whether handler h matches a delivery of event and action.
func loadMatches(h int, event, action string) bool {
	names := loadHandlers[h].names
	return names == nil || slices.Contains(names, event) || action != "" && slices.Contains(names, event+"."+action)
}

// loadRun is one load run's configuration and results.
type loadRun struct {
	n, c        int
	opts        MiddlewareOptions
	handlerWork func() // run by the OnAny handler, to make handlers slow

	// results
	elapsed  time.Duration
	status   map[int]int
	lat      []time.Duration // of every request
	peakHeap uint64
}

// TestLoad sends N signed deliveries (every 10th with a bad signature) at
// concurrency C through the middleware on 127.0.0.1 and checks that every
// delivery answered 2xx reached each matching handler exactly once, that the
// others reached none and got a documented answer, and that the heap stayed
// bounded. It reports requests/s, p50/p99 latency and the peak heap. A second
// run with MaxInFlight far below C and slow handlers checks the same under
// 503s.
func TestLoad(t *testing.T) {
	n, c := *loadN, *loadC
	if testing.Short() {
		n = min(n, 500)
	}
	t.Run("default", func(t *testing.T) {
		r := &loadRun{n: n, c: c}
		r.run(t)
		r.report(t)
	})
	t.Run("bound", func(t *testing.T) {
		// Handlers that take a moment, and room for 2: most deliveries of 16
		// clients get 503, and none of those may reach a handler.
		r := &loadRun{n: min(n, 1000), c: c, opts: MiddlewareOptions{MaxInFlight: 2}, handlerWork: func() { time.Sleep(time.Millisecond) }}
		r.run(t)
		r.report(t)
		if r.status[http.StatusServiceUnavailable] == 0 {
			t.Logf("no delivery was refused: the machine kept up") // allowed: not a timing assertion
		}
	})
}

func (r *loadRun) run(t *testing.T) {
	examples := corpus.All()
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	counts := make([][5]atomic.Int32, r.n)
	for h, reg := range loadHandlers {
		handler := func(ctx context.Context, e emitter.Event) error {
			i, err := strconv.Atoi(e.ID)
			if err != nil || i < 0 || i >= len(counts) {
				return fmt.Errorf("bad delivery id %q", e.ID)
			}
			counts[i][h].Add(1)
			if reg.names == nil && r.handlerWork != nil {
				r.handlerWork()
			}
			return nil
		}
		if reg.names == nil {
			wh.OnAny(handler)
		} else {
			wh.OnNames(reg.names, handler)
		}
	}
	mw := NewMiddleware(wh, r.opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mw, ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + DefaultPath
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: r.c, MaxConnsPerHost: r.c}, Timeout: generous}
	defer client.CloseIdleConnections()

	// Signatures are computed before the clock starts.
	sigs := make([]string, len(examples))
	badSigs := make([]string, len(examples))
	for i, ex := range examples {
		sigs[i] = sign(t, secret, ex.Body)
		badSigs[i] = sign(t, "not the secret", ex.Body)
	}

	// The heap is sampled without stopping the world.
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), *loadTimeout)
	defer cancel()
	statuses := make([]int, r.n)
	r.lat = make([]time.Duration, r.n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, r.c)
	start := time.Now()
	for range r.c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= r.n {
					return
				}
				ex := examples[i%len(examples)]
				sig := sigs[i%len(examples)]
				if i%10 == 9 {
					sig = badSigs[i%len(examples)]
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(ex.Body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(HeaderEvent, ex.Event)
				req.Header.Set(HeaderDelivery, strconv.Itoa(i))
				req.Header.Set(HeaderSignature, sig)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					errs <- fmt.Errorf("delivery %d: %w", i, err)
					cancel()
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				r.lat[i] = time.Since(t0)
				statuses[i] = res.StatusCode
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Close waits for handlers that outlived a 202.
	cctx, ccancel := context.WithTimeout(context.Background(), generous)
	defer ccancel()
	if err := wh.Close(cctx); err != nil {
		t.Fatal(err)
	}
	close(stopSampling)
	<-sampled
	r.peakHeap = peak.Load()

	r.status = map[int]int{}
	for i, code := range statuses {
		r.status[code]++
		ex := examples[i%len(examples)]
		acked := code == http.StatusOK || code == http.StatusAccepted
		switch {
		case i%10 == 9 && code != http.StatusBadRequest:
			t.Errorf("delivery %d with a bad signature: %d", i, code)
		case i%10 != 9 && !acked && code != http.StatusServiceUnavailable:
			t.Errorf("delivery %d: %d, not a documented answer to a valid delivery", i, code)
		case code == http.StatusServiceUnavailable && r.opts.MaxInFlight == 0:
			t.Errorf("delivery %d: 503 below the default bound", i)
		}
		for h := range loadHandlers {
			want := int32(0)
			if acked && loadMatches(h, ex.Event, ex.Action) {
				want = 1
			}
			if got := counts[i][h].Load(); got != want {
				t.Errorf("delivery %d (%s, answered %d) reached handler %d %d times, want %d", i, ex.Name(), code, h, got, want)
			}
		}
	}
	if r.peakHeap > uint64(*loadHeap) {
		t.Errorf("peak heap %d MiB, over the bound of %d MiB", r.peakHeap>>20, *loadHeap>>20)
	}
	runtime.GC()
}

func (r *loadRun) report(t *testing.T) {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(float64(len(lat)-1)*p)] }
	t.Logf("%d deliveries, %d clients, MaxInFlight %d: %.0f requests/s, p50 %v, p99 %v, max %v, peak heap %.1f MiB; answers %v",
		r.n, r.c, r.opts.MaxInFlight, float64(r.n)/r.elapsed.Seconds(), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		lat[len(lat)-1].Round(time.Microsecond), float64(r.peakHeap)/(1<<20), r.status)
}
