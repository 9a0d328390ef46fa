package inbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// benchBody is a delivery of a typical size (an issues.opened is 5–10 KB).
var benchBody = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"action":"opened","issue":{"number":1,"title":"bench","body":"`)
	for b.Len() < 6000 {
		b.WriteString("lorem ipsum dolor sit amet ")
	}
	b.WriteString(`"},"repository":{"full_name":"o/r"},"sender":{"login":"u"}}`)
	return b.Bytes()
}()

// benchReceiver serves a middleware with a no-op handler over HTTP on
// 127.0.0.1: in memory (mode ""), with an embedded inbox whose workers run
// the handler (mode "inbox", "fsync"), or with one without workers ("store";
// handled is then nil).
func benchReceiver(b *testing.B, mode string) (url string, handled *atomic.Int64) {
	b.Helper()
	wh := newWebhooks(b)
	handled = new(atomic.Int64)
	wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
	var store webhooks.Inbox
	switch mode {
	case "store": // no workers: what ingest alone costs
		store = openInbox(b, b.TempDir(), Options{})
		handled = nil
	case "inbox", "fsync":
		store = openInbox(b, b.TempDir(), Options{Receiver: wh, Fsync: mode == "fsync"})
	}
	return receiver(b, wh, store).URL + webhooks.DefaultPath, handled
}

// benchPost posts the bench delivery with id and checks the answer. Each
// delivery's body is its own (the replay guard answers a body stored under
// another id as a duplicate), signed here: the signing is the client's cost,
// the same in every mode.
func benchPost(b *testing.B, c *http.Client, url, id string) {
	body := unique(benchBody, id)
	sig, _ := signing.Sign(testSecret, body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issues")
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		b.Errorf("answer %d", res.StatusCode)
	}
}

// BenchmarkIngestHTTP: deliveries/s answered over HTTP by the middleware, 16
// clients: in memory (handlers run before the 200), with an embedded inbox
// (stored, then 202; the workers run the handlers meanwhile), with an inbox
// without workers (store: what ingest alone costs, as during a burst the
// workers work off later), and with Fsync. Run the three in one invocation: the ratio inbox/memory is what
// the README quotes.
func BenchmarkIngestHTTP(b *testing.B) {
	for _, mode := range []string{"memory", "inbox", "store", "fsync"} {
		b.Run(mode, func(b *testing.B) {
			m := mode
			if m == "memory" {
				m = ""
			}
			url, handled := benchReceiver(b, m)
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var n atomic.Int64
			b.SetParallelism(8) // 16 clients on 2 cores
			b.SetBytes(int64(len(benchBody)))
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchPost(b, c, url, fmt.Sprintf("b-%d", n.Add(1)))
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			// The workers catch up before the next mode runs; the CPU they
			// take to do so is counted, so that the figure is the whole cost
			// of a delivery (HTTP client included, the same in each mode).
			for deadline := time.Now().Add(time.Minute); handled != nil && handled.Load() < int64(b.N) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/delivery")
		})
	}
}

// BenchmarkEnqueue: Enqueue alone, without HTTP, 16 goroutines.
func BenchmarkEnqueue(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			in := openInbox(b, b.TempDir(), Options{Fsync: fsync})
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("e-%d", n.Add(1))
					if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: id, Name: "issues", Payload: unique(benchBody, id)}); err != nil {
						b.Error(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkLatency: time to the 2xx of deliveries sent at a steady rate
// (open loop: each on its own goroutine, sent on schedule whether or not the
// previous ones were answered) through the embedded inbox: 1,000 per second
// by default, 500 per second with Fsync (about what it sustains here); p50,
// p99 and max are reported. Use -benchtime=5000x.
func BenchmarkLatency(b *testing.B) {
	for _, tc := range []struct {
		mode string
		rate int
	}{{"inbox", 1000}, {"fsync", 500}} {
		b.Run(fmt.Sprintf("%s-%dps", tc.mode, tc.rate), func(b *testing.B) {
			url, _ := benchReceiver(b, tc.mode)
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			tick := time.NewTicker(time.Second / time.Duration(tc.rate))
			defer tick.Stop()
			b.ResetTimer()
			for i := range b.N {
				<-tick.C
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					benchPost(b, c, url, fmt.Sprintf("l-%d", i))
					lat[i] = time.Since(start)
				}()
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkOpen100k: the time Open takes (until Enqueue can be called, and
// until the first Enqueue returns) on a directory holding 100,000 stored
// deliveries, handled ones and queued ones. The directory is built once, in
// FORGEHOOKS_BENCH_DIR when set (kept between runs), or in a temporary one.
func BenchmarkOpen100k(b *testing.B) {
	const total = 100_000
	dir := os.Getenv("FORGEHOOKS_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	dir = filepath.Join(dir, "open100k")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		os.RemoveAll(dir)
		// Half handled (acknowledged by the workers), half still queued.
		wh := newWebhooks(b)
		var handled atomic.Int64
		wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
		in, err := openStarted(context.Background(), Options{Dir: dir, Receiver: wh, Logger: quiet(b)})
		if err != nil {
			b.Fatal(err)
		}
		fill := func(from, to int) {
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := from + w; i < to; i += 16 {
						if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: fmt.Sprintf("o-%d", i), Name: "issues", Payload: unique(benchBody, fmt.Sprintf("o-%d", i))}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		}
		fill(0, total/2)
		for handled.Load() < total/2 {
			time.Sleep(50 * time.Millisecond)
		}
		in.Close(context.Background())
		in, err = Open(context.Background(), Options{Dir: dir, Logger: quiet(b)}) // no workers
		if err != nil {
			b.Fatal(err)
		}
		fill(total/2, total)
		in.Close(context.Background())
		os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600)
	}
	var openTotal, firstTotal time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		wh := newWebhooks(b)
		in, err := openStarted(context.Background(), Options{Dir: dir, Receiver: wh, Logger: quiet(b), Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Since(start)
		if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: fmt.Sprintf("probe-%d-%d", time.Now().UnixNano(), i), Name: "issues", Payload: unique([]byte(`{}`), fmt.Sprint(time.Now().UnixNano()))}); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		b.StopTimer()
		// Closed at once: the stored deliveries stay as they were (the
		// no-handler workers ack a few; the rest stay queued).
		in.Close(context.Background())
		b.StartTimer()
		openTotal += opened
		firstTotal += first
	}
	b.ReportMetric(openTotal.Seconds()/float64(b.N), "s-to-open")
	b.ReportMetric(firstTotal.Seconds()/float64(b.N), "s-to-first-2xx")
}

// BenchmarkOrdered: deliveries/s from the first request until the workers
// handled the last one, over 50 repositories, 16 clients over HTTP: the
// embedded inbox without order and with OrderBy ByRepository (each key
// runs one delivery at a time). Run both in one invocation: the
// ratio ordered/unordered is what bench/README.md quotes.
func BenchmarkOrdered(b *testing.B) {
	const keys = 50
	bodies := make([][]byte, keys)
	sigs := make([]string, keys)
	for k := range keys {
		bodies[k] = bytes.Replace(benchBody, []byte(`"repository":{`), fmt.Appendf(nil, `"repository":{"id":%d,`, 1000+k), 1)
		sigs[k], _ = signing.Sign(testSecret, bodies[k])
	}
	for _, mode := range []string{"unordered", "ordered"} {
		b.Run(mode, func(b *testing.B) {
			wh := newWebhooks(b)
			var handled atomic.Int64
			wh.OnAny(func(context.Context, emitter.Event) error { handled.Add(1); return nil })
			// One body per key, sent under many ids: the replay guard
			// would refuse all but the first.
			o := Options{Receiver: wh, AllowRepeatedBodies: true}
			if mode == "ordered" {
				o.OrderBy = ByRepository
			}
			url := receiver(b, wh, openInbox(b, b.TempDir(), o)).URL + webhooks.DefaultPath
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					k := int(i % keys)
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[k]))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(webhooks.HeaderEvent, "issues")
					req.Header.Set(webhooks.HeaderDelivery, fmt.Sprintf("ord-%d", i))
					req.Header.Set(webhooks.HeaderSignature, sigs[k])
					res, err := c.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode/100 != 2 {
						b.Errorf("answer %d", res.StatusCode)
					}
				}
			})
			for deadline := time.Now().Add(2 * time.Minute); handled.Load() < int64(b.N) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			if handled.Load() < int64(b.N) {
				b.Fatalf("%d of %d handled", handled.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handled/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/delivery")
		})
	}
}
