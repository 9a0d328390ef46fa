package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	gogithub "github.com/google/go-github/v75/github"

	"forgehooks.dev/forgehooks/bench"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// runServer serves one kind of receiver on addr until killed, or until SIGINT
// or SIGTERM, when it writes a CPU profile to cpuprofile (NAME.prof, when
// set), and beside it an allocation profile (NAME.allocs.prof) and what the
// runtime counted of the collector and of allocation per request
// (NAME.gc.txt), and removes what it made (jsfloor's store).
func runServer(kind, addr, cpuprofile string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		return fmt.Errorf("-addr %q: only 127.0.0.1 is allowed", addr)
	}
	var h http.Handler
	cleanup := func() {}
	switch kind {
	case "jsfloor":
		f, err := newJSFloor()
		if err != nil {
			return err
		}
		h, cleanup = f, f.close
	case "inbox":
		var err error
		if h, cleanup, err = newInboxReceiver(); err != nil {
			return err
		}
	case "nethttp":
		h = http.HandlerFunc(netHTTP)
	case "bare":
		h = http.HandlerFunc(bare)
	case "raw", "typed", "typed-all":
		wh, err := webhooks.New(webhooks.Options{Secret: bench.Secret, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		switch kind {
		case "raw":
			wh.OnAny(func(context.Context, emitter.Event) error { return nil })
		case "typed":
			payloads.OnPushEvent(wh, push)
		default:
			bench.RegisterEveryEvent(wh, push)
		}
		h = webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/"})
	case "go-github":
		h = http.HandlerFunc(goGitHub)
	default:
		return fmt.Errorf("unknown receiver %q (nethttp, bare, jsfloor, inbox, raw, typed, typed-all, go-github)", kind)
	}
	defer cleanup()
	stopProfile := func() {}
	if cpuprofile != "" {
		// One sample per 64 KiB allocated: some thousands over a run, where
		// one per 4 KiB cost a tenth of the receiver's CPU (the stacks of
		// the samples) and moved what the CPU profile shows.
		runtime.MemProfileRate = 64 << 10
		var served atomic.Int64
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			next.ServeHTTP(w, r)
		})
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		start := readGCMetrics()
		stopProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
			base := strings.TrimSuffix(cpuprofile, ".prof")
			if err := writeProfile("allocs", base+".allocs.prof"); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			if err := os.WriteFile(base+".gc.txt", []byte(readGCMetrics().since(start, served.Load())), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		stopProfile()
		cleanup()
		os.Exit(0)
	}()
	return srv.ListenAndServe()
}

// writeProfile writes the named runtime/pprof profile to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// gcMetrics is what the runtime counts of the collector and of allocation,
// read with runtime/metrics.
type gcMetrics struct{ cpu, gcCPU, cycles, bytes, objects float64 }

var gcMetricNames = []string{
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
}

func readGCMetrics() gcMetrics {
	s := make([]metrics.Sample, len(gcMetricNames))
	for i, n := range gcMetricNames {
		s[i].Name = n
	}
	metrics.Read(s)
	v := make([]float64, len(s))
	for i := range s {
		switch s[i].Value.Kind() {
		case metrics.KindFloat64:
			v[i] = s[i].Value.Float64()
		case metrics.KindUint64:
			v[i] = float64(s[i].Value.Uint64())
		}
	}
	return gcMetrics{v[0], v[1], v[2], v[3], v[4]}
}

// since says what happened between start and m, per request of n: the
// collector's share of the CPU the runtime accounts (its estimate, which
// leaves out the kernel's time), cycles, bytes and objects allocated.
func (m gcMetrics) since(start gcMetrics, n int64) string {
	if n == 0 {
		n = 1
	}
	cpu, gc := m.cpu-start.cpu, m.gcCPU-start.gcCPU
	share := 0.0
	if cpu > 0 {
		share = gc / cpu
	}
	return fmt.Sprintf("requests %d\ngc cpu share %.3f (gc %.3f s of %.3f s the runtime counts)\ngc cpu per request %.2f µs\ngc cycles %.0f (one per %.0f requests)\nallocated per request %.0f B, %.1f objects\n",
		n, share, gc, cpu, gc/float64(n)*1e6, m.cycles-start.cycles, float64(n)/max(m.cycles-start.cycles, 1),
		(m.bytes-start.bytes)/float64(n), (m.objects-start.objects)/float64(n))
}

// push is the typed receivers' push handler: it reads the decoded payload.
func push(_ context.Context, e payloads.Event[*payloads.PushEvent]) error {
	if e.Payload.Ref == "" {
		return fmt.Errorf("no ref")
	}
	return nil
}

// netHTTP reads the body and answers, checking nothing: what net/http alone
// costs per request on this machine.
func netHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// verifiedBody reads the body and checks its HMAC as the least receiver
// does; false when it answered the request with an error.
func verifiedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength < 0 || r.ContentLength > webhooks.DefaultMaxBodyBytes {
		http.Error(w, "length", http.StatusBadRequest)
		return nil, false
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return nil, false
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	var want [sha256.Size]byte
	if len(sig) != 71 {
		http.Error(w, "signature", http.StatusBadRequest)
		return nil, false
	}
	if _, err := hex.Decode(want[:], []byte(sig[7:])); err != nil {
		http.Error(w, "signature", http.StatusBadRequest)
		return nil, false
	}
	mac := hmac.New(sha256.New, []byte(bench.Secret))
	mac.Write(body)
	var sum [sha256.Size]byte
	if !hmac.Equal(mac.Sum(sum[:0]), want[:]) {
		http.Error(w, "signature", http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// bare is the least a receiver can do: read the body, check its HMAC, check
// that it is a JSON object and find its action, answer.
func bare(w http.ResponseWriter, r *http.Request) {
	body, ok := verifiedBody(w, r)
	if !ok {
		return
	}
	if _, err := jsonscan.Scan(body); err != nil {
		http.Error(w, "json", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// goGitHub is go-github's documented receiver: ValidatePayload, then
// ParseWebHook into its typed event.
func goGitHub(w http.ResponseWriter, r *http.Request) {
	payload, err := gogithub.ValidatePayload(r, []byte(bench.Secret))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ev, err := gogithub.ParseWebHook(gogithub.WebHookType(r), payload)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if p, ok := ev.(*gogithub.PushEvent); !ok || p.GetRef() == "" {
		http.Error(w, "not a push", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}
