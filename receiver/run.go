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
	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/internal/connlimit"
)

// startTimeout bounds the start of the inbox's workers (creating their
// consumers, handing back the leases of the process before).
const startTimeout = time.Minute

// Run starts the inbox's workers (the handlers of stored deliveries run from
// then on, not before; with IngestOnly, never), serves the parts whose address Options names, runs
// catch-up (when configured) once it listens, and waits for ctx; then it
// drains (see Close) and returns. It returns early with the error of a
// server that failed.
func (r *Receiver) Run(ctx context.Context) error {
	type part struct {
		name, addr string
		h          http.Handler
		ln         net.Listener
		srv        *http.Server
	}
	var parts []*part
	if r.opts.Addr != "" {
		parts = append(parts, &part{name: "webhooks", addr: r.opts.Addr, h: r.handler})
	}
	if r.opts.InspectorAddr != "" && r.page != nil {
		parts = append(parts, &part{name: "inspector", addr: r.opts.InspectorAddr, h: r.page})
	}
	if r.opts.MetricsAddr != "" && r.metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", r.metrics)
		parts = append(parts, &part{name: "metrics", addr: r.opts.MetricsAddr, h: mux})
	}
	// Every address is taken before any is served or announced: a part that
	// cannot listen stops the start.
	for _, p := range parts {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			for _, q := range parts {
				if q.ln != nil {
					q.ln.Close()
				}
			}
			return errors.Join(fmt.Errorf("receiver: %s: cannot listen on %s: %w", p.name, p.addr, err), r.Close(context.Background()))
		}
		p.ln = ln
		if p.name == "webhooks" {
			r.setListenAddr(p.name, ln.Addr().String())
		}
	}
	// The inbox's workers start once every address is taken: a Receiver
	// that cannot serve runs no handler.
	if r.in != nil && !r.opts.IngestOnly {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
		err := r.in.Start(sctx)
		cancel()
		if err != nil {
			for _, p := range parts {
				p.ln.Close()
			}
			return errors.Join(fmt.Errorf("receiver: starting the inbox's workers: %w", err), r.Close(context.Background()))
		}
	}
	failed := make(chan error, len(parts))
	var servers []*http.Server
	limit, known := fdLimit()
	hookConns, otherConns, fdLimit := connBounds(r.opts.MaxConns, len(parts)-1, limit, known)
	for _, p := range parts {
		maxConns := otherConns
		p.srv = r.server(p.h, p.name != "inspector")
		servers = append(servers, p.srv)
		u := "http://" + p.ln.Addr().String()
		switch p.name {
		case "webhooks":
			maxConns = hookConns
			attrs := []any{"url", u + mwPath(r.opts.Middleware.Path), "max_conns", maxConns}
			if fdLimit > 0 {
				attrs = append(attrs, "fd_limit", fdLimit)
			}
			r.log.Info("forgehooks: receiving deliveries", attrs...)
		case "inspector":
			p.srv.RegisterOnShutdown(r.page.Close)
			r.page.SetWebhookURL("http://" + r.listenAddr("webhooks") + mwPath(r.opts.Middleware.Path))
			r.log.Info("forgehooks: inspector page", "url", u+"/")
		case "metrics":
			r.log.Info("forgehooks: serving metrics", "url", u+"/metrics")
		}
		ln := connlimit.New(maxConns).Serve(p.srv, p.ln)
		go func() {
			if err := p.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				failed <- fmt.Errorf("receiver: %s: %w", p.name, err)
			}
		}()
	}
	if r.opts.OnListen != nil {
		for _, p := range parts {
			r.opts.OnListen(p.name, p.ln.Addr().String())
		}
	}
	var err error
	// Catch-up starts once the listener is up: what it has redelivered must
	// find a receiver. It ends before the inbox closes.
	stopCatchup := r.startCatchup(ctx)
	select {
	case err = <-failed:
	case <-ctx.Done():
	}
	stopCatchup()
	sctx, cancel := context.Background(), context.CancelFunc(func() {})
	// A negative DrainTimeout, no bound, stays negative: no deadline.
	if timeout := bound.Value(r.opts.DrainTimeout, DefaultDrainTimeout, -1); timeout > 0 {
		r.log.Info("forgehooks: shutting down; letting running handlers finish", "timeout", timeout)
		sctx, cancel = context.WithTimeout(sctx, timeout)
	} else {
		r.log.Info("forgehooks: shutting down; letting running handlers finish", "timeout", "none")
	}
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
	var err error
	if r.admin != nil {
		r.admin()
	}
	if r.in != nil {
		err = r.in.Close(ctx)
	}
	// After the drain: the attempts that end during it are logged and
	// counted too.
	for _, stop := range r.stops {
		stop()
	}
	r.stops = nil
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
