package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/catchup"
)

// Run serves the parts whose address Options names, runs catch-up (when
// configured) once it listens, and waits for ctx; then it drains (see Close)
// and returns. It returns early with the error of a server that failed.
func (r *Receiver) Run(ctx context.Context) error {
	var servers []*http.Server
	failed := make(chan error, 3)
	listen := func(part, addr string, h http.Handler, writeTimeout bool) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("receiver: %s: cannot listen on %s: %w", part, addr, err)
		}
		srv := r.server(h, writeTimeout)
		servers = append(servers, srv)
		if part == "inspector" {
			srv.RegisterOnShutdown(r.page.Close)
			r.page.SetWebhookURL("http://" + r.listenAddr("webhooks") + mwPath(r.opts.Middleware.Path))
		}
		u := "http://" + ln.Addr().String()
		switch part {
		case "webhooks":
			u += mwPath(r.opts.Middleware.Path)
			r.setListenAddr(part, ln.Addr().String())
			r.log.Info("forgehooks: receiving deliveries", "url", u)
		case "inspector":
			r.log.Info("forgehooks: inspector page", "url", u+"/")
		case "metrics":
			r.log.Info("forgehooks: serving metrics", "url", u+"/metrics")
		}
		if r.opts.OnListen != nil {
			r.opts.OnListen(part, ln.Addr().String())
		}
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("receiver: %s: %w", part, err)
			}
		}()
		return nil
	}
	var err error
	if r.opts.Addr != "" {
		err = listen("webhooks", r.opts.Addr, r.handler, true)
	}
	if err == nil && r.opts.InspectorAddr != "" && r.page != nil {
		err = listen("inspector", r.opts.InspectorAddr, r.page, false)
	}
	if err == nil && r.opts.MetricsAddr != "" && r.metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", r.metrics)
		err = listen("metrics", r.opts.MetricsAddr, mux, true)
	}
	if err != nil {
		for _, s := range servers {
			s.Close()
		}
		return errors.Join(err, r.Close(context.Background()))
	}
	// Catch-up starts once the listener is up: what it has redelivered must
	// find a receiver. It ends before the inbox closes.
	stopCatchup := r.startCatchup(ctx)
	select {
	case err = <-failed:
	case <-ctx.Done():
	}
	stopCatchup()
	timeout := r.opts.DrainTimeout
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	r.log.Info("forgehooks: shutting down; letting running handlers finish", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Shutdown(sctx) }()
	}
	wg.Wait()
	return errors.Join(err, errors.Join(errs...), r.Close(sctx))
}

// Close drains what New opened: the inbox stops taking deliveries (the
// middleware answers 503) and its running handlers finish until ctx is
// done (those not finished run again after a restart); then the Webhooks'
// handlers and error handlers are waited for, and the page's streams end.
// Call it after the server that serves Handler stopped, when Run is not
// used; Run calls it.
func (r *Receiver) Close(ctx context.Context) error {
	for _, stop := range r.stops {
		stop()
	}
	r.stops = nil
	var err error
	if r.admin != nil {
		r.admin()
	}
	if r.in != nil {
		err = r.in.Close(ctx)
	}
	if r.page != nil {
		r.page.Close()
	}
	return errors.Join(err, r.wh.Close(ctx))
}

func (r *Receiver) server(h http.Handler, writeTimeout bool) *http.Server {
	srv := &http.Server{Handler: h, ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	if t := r.opts.Server; t != nil {
		srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = t.ReadHeaderTimeout, t.ReadTimeout, t.WriteTimeout, t.IdleTimeout
	}
	if !writeTimeout {
		srv.ReadTimeout, srv.WriteTimeout = 0, 0
	}
	return srv
}

func (r *Receiver) setListenAddr(part, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if part == "webhooks" {
		r.hookAddr = addr
	}
}

// listenAddr is where Run listens for deliveries, or the default address
// when it does not.
func (r *Receiver) listenAddr(string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hookAddr == "" {
		return "127.0.0.1:3000"
	}
	return r.hookAddr
}

func mwPath(p string) string {
	if p == "" {
		return "/api/forge/webhooks"
	}
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// startCatchup runs catch-up until the returned stop is called.
func (r *Receiver) startCatchup(ctx context.Context) (stop func()) {
	if r.opts.Catchup == nil || r.opts.CatchupEvery <= 0 {
		return func() {}
	}
	o := *r.opts.Catchup
	o.Logger = r.log
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.log.Info("forgehooks: catch-up", "hook", o.Hook.String(), "every", r.opts.CatchupEvery)
	go func() {
		defer close(done)
		catchup.Every(ctx, r.opts.CatchupEvery, o, r.catchupReport)
	}()
	return func() {
		cancel()
		<-done
	}
}

// catchupReport logs one line per catch-up run.
func (r *Receiver) catchupReport(rep catchup.Report, err error) {
	attrs := []any{"hook", rep.Hook.String(), "deliveries", len(rep.Entries), "pages", rep.Pages,
		"requested", rep.Requested, "succeeded", rep.Count(catchup.SkipSucceeded), "held", rep.Count(catchup.SkipHeld),
		"requested_earlier", rep.Count(catchup.SkipRequested), "since", rep.From.UTC().Format(time.RFC3339)}
	if err != nil {
		r.log.Error("catch-up failed; the next run tries again", append(attrs, "error", err)...)
		return
	}
	r.log.Info("catch-up done", attrs...)
}
