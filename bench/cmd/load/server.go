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
	"runtime/pprof"
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
// or SIGTERM, when it writes its CPU profile to cpuprofile (when set) and
// removes what it made (jsfloor's store).
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
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stopProfile := func() {}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
		}
	}
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

// bare is the least a receiver can do: read the body, check its HMAC, check
// that it is a JSON object and find its action, answer.
func bare(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength < 0 || r.ContentLength > webhooks.DefaultMaxBodyBytes {
		http.Error(w, "length", http.StatusBadRequest)
		return
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	var want [sha256.Size]byte
	if len(sig) != 71 {
		http.Error(w, "signature", http.StatusBadRequest)
		return
	}
	if _, err := hex.Decode(want[:], []byte(sig[7:])); err != nil {
		http.Error(w, "signature", http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, []byte(bench.Secret))
	mac.Write(body)
	var sum [sha256.Size]byte
	if !hmac.Equal(mac.Sum(sum[:0]), want[:]) {
		http.Error(w, "signature", http.StatusBadRequest)
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
