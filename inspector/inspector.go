// Package inspector serves the delivery inspector: a web page that lists the
// deliveries a receiver got as they arrive (Server-Sent Events), shows one in
// detail (headers, payload as a JSON tree, the Go type it decodes to, every
// attempt and its error, a command that sends it again) and replays it, or
// retries a dead letter.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary. Payloads
// are attacker-controlled, so the page builds its DOM with textContent only,
// under a strict Content-Security-Policy with Trusted Types required; actions
// are POSTs with a CSRF token; without a Token it answers only requests whose
// Host is a loopback address, which keeps DNS-rebinding pages out.
//
// Without a durable inbox the deliveries come from a Ring in memory, fed by
// the middleware's OnResult:
//
//	insp := inspector.New(inspector.Options{Webhooks: wh})
//	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: insp.OnResult})
//	admin.Handle("/inspector/", http.StripPrefix("/inspector", insp))
package inspector

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/internal/sse"
	"forgehooks.dev/forgehooks/webhooks"
)

//go:embed assets
var assets embed.FS

var indexTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// DefaultMaxRejected is the default of Options.MaxRejected.
const DefaultMaxRejected = 200

// contentSecurityPolicy allows the page's own script and style only: no inline
// script or style, no eval, no plugin, no framing, and Trusted Types with no
// policy, so that assigning a string to innerHTML (or any HTML sink) throws.
// Violations are reported to csp-report, which counts them.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'; report-uri csp-report"

// Options configures an Inspector.
type Options struct {
	// Store holds the deliveries shown: any delivery.Store, such as a durable
	// inbox. When nil, the Inspector keeps an in-memory Ring of MaxRecords
	// deliveries (MaxBytes of payloads), fed by OnResult, which replays with
	// Webhooks. The list and its search read the Store's List (no payloads);
	// a payload is loaded only for the detail view, at most
	// MaxPayloadLoads at once.
	Store delivery.Store
	// Webhooks runs replays of the in-memory Ring; without it the page
	// cannot replay. Unused with a Store.
	Webhooks *webhooks.Webhooks
	// MaxRecords and MaxBytes bound the in-memory Ring (see RingOptions).
	// Zero: the Ring's defaults. Negative: no bound.
	MaxRecords int
	MaxBytes   int64
	// MaxRejected bounds the ring of requests that stored nothing (rejected
	// ones and duplicates). Zero: DefaultMaxRejected. Negative: no bound.
	// Their bodies are never kept.
	MaxRejected int
	// Token, when set, is required of every request: as the cookie the page
	// sets after it is opened with ?token=..., or as "Authorization: Bearer".
	// When empty, only requests to a loopback Host are answered.
	Token string
	// TypeName returns the Go type a payload decodes to, such as
	// "*payloads.IssuesOpenedEvent"; default: the payloads type of the event and action, which knows the
	// generator's naming rule but not the schema.
	TypeName func(event, action string, payload []byte) string
	// Redeliver, when set, asks the forge to send delivery id again (catch-up
	// configured); the page then offers it.
	Redeliver func(ctx context.Context, id string) error
	// WebhookURL is where the commands that reproduce a delivery send it;
	// default "http://127.0.0.1:3000" + webhooks.DefaultPath.
	WebhookURL string
	// Logger gets a line per action taken. Nil: Webhooks' logger when
	// Webhooks is set, else slog.Default().
	Logger *slog.Logger
	// MaxPayloadLoads bounds the payloads loaded at once (detail views and
	// downloads; a request waits up to 10 s for a place, then gets 503), so
	// that memory stays bounded however large the stored payloads are.
	// Zero: DefaultMaxPayloadLoads. Negative: no bound.
	MaxPayloadLoads int
}

// DefaultMaxPayloadLoads is the default of Options.MaxPayloadLoads.
const DefaultMaxPayloadLoads = 2

// Inspector is the inspector page and its API, an http.Handler to serve at a
// path of its own (with http.StripPrefix). It is safe for concurrent use.
type Inspector struct {
	opts     Options
	src      delivery.Store
	ring     *Ring // the in-memory delivery.Store, when Options.Store is nil
	requests store // rejected requests and duplicates
	hub      hub
	csrf     string
	log      *slog.Logger
	stops    []func()
	mux      *http.ServeMux

	loads chan struct{} // one place per payload being loaded

	cspReports atomic.Int64
	cspLog     every // rate of the violation log line
	hookURL    atomic.Pointer[string]
}

// New returns an Inspector over opts.Store, or over a new Ring.
func New(opts Options) *Inspector {
	opts.MaxPayloadLoads = bound.Value(opts.MaxPayloadLoads, DefaultMaxPayloadLoads, math.MaxInt)
	opts.MaxRejected = bound.Value(opts.MaxRejected, DefaultMaxRejected, math.MaxInt)
	if opts.TypeName == nil {
		opts.TypeName = func(event, action string, _ []byte) string { return deriveTypeName(event, action) }
	}
	if opts.WebhookURL == "" {
		opts.WebhookURL = "http://127.0.0.1:3000" + webhooks.DefaultPath
	}
	in := &Inspector{opts: opts, src: opts.Store, log: opts.Logger, cspLog: every{period: 10 * time.Second}}
	in.hookURL.Store(&opts.WebhookURL)
	if opts.MaxPayloadLoads != math.MaxInt {
		in.loads = make(chan struct{}, opts.MaxPayloadLoads)
	}
	if in.log == nil && opts.Webhooks != nil {
		in.log = opts.Webhooks.Logger()
	}
	if in.log == nil {
		in.log = slog.Default()
	}
	if in.src == nil {
		in.ring = NewRing(RingOptions{Webhooks: opts.Webhooks, MaxRecords: opts.MaxRecords, MaxBytes: opts.MaxBytes, Logger: in.log})
		in.src = in.ring
	}
	// The count bounds the ring of requests; the bytes only back it up, as
	// each record is cut to at most maxRejectedSize.
	in.requests.init(opts.MaxRejected, int64(min(opts.MaxRejected, math.MaxInt64/maxRejectedSize))*maxRejectedSize, false)
	var b [32]byte
	rand.Read(b[:])
	in.csrf = hex.EncodeToString(b[:])
	in.stops = append(in.stops, in.src.Watch(func(r delivery.Record) { in.publish(r, false) }))
	in.stops = append(in.stops, in.requests.Watch(func(r delivery.Record) { in.publish(r, true) }))
	in.routes()
	return in
}

// SetWebhookURL changes Options.WebhookURL, for a receiver whose address is
// known only once it listens (port 0).
func (in *Inspector) SetWebhookURL(url string) { in.hookURL.Store(&url) }

// Ring returns the in-memory Ring, or nil when Options.Store was given.
func (in *Inspector) Ring() *Ring { return in.ring }

// CSPViolations returns how many Content-Security-Policy violation reports
// the pages sent.
func (in *Inspector) CSPViolations() int64 { return in.cspReports.Load() }

// Dropped returns how many live pages were dropped for falling behind; each
// reconnects and reloads.
func (in *Inspector) Dropped() int64 { return in.hub.drops.Load() }

// Close ends every live page's stream, so that an http.Server's Shutdown need
// not wait for them, and stops watching the Store.
func (in *Inspector) Close() {
	in.hub.close()
	for _, stop := range in.stops {
		stop()
	}
}

// Limits of what a rejected request's record keeps of its headers.
const (
	maxRejectedHeaders    = 64
	maxRejectedHeaderSize = 1 << 10
	maxRejectedSize       = maxRejectedHeaders*(2*maxRejectedHeaderSize+32) + 4*maxRejectedHeaderSize + 512
)

// OnResult records one request's result, for webhooks.MiddlewareOptions: a
// delivery in the in-memory Ring (with a delivery.Store, the inbox stores it
// instead), a rejected request or a duplicate in the ring of requests, with
// its headers cut to a bounded size and never its body. It copies what it
// keeps and never blocks on a page.
func (in *Inspector) OnResult(res webhooks.Result) {
	if in.ring != nil && in.ring.Add(res) {
		return
	}
	// With a delivery.Store (a durable inbox) the middleware answers 202 for a
	// delivery stored and 200 only for a duplicate: the status tells it also
	// where Result.Duplicate is not set.
	dup := res.Duplicate || in.ring == nil && res.Verified && res.Status == http.StatusOK
	if res.Verified && !dup && (res.Status < 300 || res.Status == http.StatusInternalServerError) {
		return // stored by the delivery.Store
	}
	rec := &delivery.Record{
		ID: res.ID, Tenant: res.Tenant, Name: res.Name, Action: res.Action, ReceivedAt: res.ReceivedAt,
		Status: delivery.StatusRejected, HTTPStatus: res.Status, Verified: res.Verified, Duration: res.Duration,
		Header: boundedHeader(res.Header),
	}
	if dup {
		rec.Status = delivery.StatusDuplicate
	}
	if res.Err != nil {
		rec.Reason = res.Err.Error()
		if len(rec.Reason) > maxRejectedHeaderSize {
			rec.Reason = rec.Reason[:maxRejectedHeaderSize]
		}
	}
	rec.ID, rec.Name = cut(rec.ID), cut(rec.Name)
	in.requests.add(rec)
}

func cut(s string) string {
	if len(s) > maxRejectedHeaderSize {
		return s[:maxRejectedHeaderSize]
	}
	return s
}

// boundedHeader copies at most maxRejectedHeaders values of h, names and
// values cut to maxRejectedHeaderSize bytes: an unverified request's headers are whatever
// its sender chose.
func boundedHeader(h http.Header) http.Header {
	out := make(http.Header, min(len(h), maxRejectedHeaders))
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			if n == maxRejectedHeaders {
				return out
			}
			out[cut(k)] = append(out[cut(k)], cut(v))
			n++
		}
	}
	return out
}

// publish sends a changed record to the live pages, encoded once for all.
func (in *Inspector) publish(rec delivery.Record, request bool) {
	if !in.hub.active() {
		return
	}
	msg, err := json.Marshal(in.row(&rec, request))
	if err != nil {
		return
	}
	in.hub.publish(msg)
}

func (in *Inspector) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", in.index)
	m.Handle("GET /assets/", http.FileServerFS(assets))
	m.HandleFunc("GET /api/deliveries", in.list)
	m.HandleFunc("GET /api/delivery", in.detail)
	m.HandleFunc("GET /api/payload", in.payload)
	m.HandleFunc("GET /api/events", in.events)
	m.HandleFunc("GET /api/stats", in.stats)
	m.HandleFunc("POST /api/replay", in.action("replay", func(ctx context.Context, id string) error { return in.src.Replay(ctx, id) }))
	m.HandleFunc("POST /api/retry", in.action("retry", func(ctx context.Context, id string) error { return in.src.Retry(ctx, id) }))
	m.HandleFunc("POST /api/redeliver", in.action("redeliver", func(ctx context.Context, id string) error {
		if in.opts.Redeliver == nil {
			return delivery.ErrUnsupported
		}
		return in.opts.Redeliver(ctx, id)
	}))
	m.HandleFunc("POST /csp-report", in.cspReport)
	in.mux = m
}

// ServeHTTP serves the page, its assets and its API, after the checks of
// access (Token, or a loopback Host) and, for actions, of the CSRF token.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !in.allowed(w, r) {
		return
	}
	if r.Method == http.MethodPost && r.URL.Path != "/csp-report" {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
			httpError(w, http.StatusForbidden, "cross-site request refused")
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(in.csrf)) != 1 {
			httpError(w, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
			return
		}
	}
	in.mux.ServeHTTP(w, r)
}

const tokenCookie = "forgehooks_inspector"

// allowed checks the Token, or without one that the request is to a loopback
// Host, and answers when it is not.
func (in *Inspector) allowed(w http.ResponseWriter, r *http.Request) bool {
	if in.opts.Token == "" {
		if !loopbackHost(r.Host) {
			httpError(w, http.StatusForbidden, "the inspector answers only at a loopback address (localhost, 127.0.0.1, [::1]) unless it has a token")
			return false
		}
		return true
	}
	want := []byte(in.opts.Token)
	if c, err := r.Cookie(tokenCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), want) == 1 {
		return true
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), want) == 1 {
		return true
	}
	if q := r.URL.Query(); r.Method == http.MethodGet && r.URL.Path == "/" && q.Has("token") {
		if subtle.ConstantTimeCompare([]byte(q.Get("token")), want) == 1 {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: in.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			// Off the address bar and the history, now that the cookie has it.
			http.Redirect(w, r, "./", http.StatusSeeOther)
			return false
		}
	}
	httpError(w, http.StatusUnauthorized, "open the inspector with ?token=<its token> (the value of the --ui-token-env variable)")
	return false
}

// loopbackHost reports whether a Host header names this machine by a
// loopback address or "localhost".
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address ("host:port") accepts
// connections from this machine only. An empty host (all interfaces) is not.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return loopbackHost(host)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

func (in *Inspector) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	indexTemplate.Execute(w, struct {
		CSRF      string
		Redeliver bool
	}{in.csrf, in.opts.Redeliver != nil})
}

func (in *Inspector) stats(w http.ResponseWriter, r *http.Request) {
	st := map[string]int64{
		"cspViolations": in.cspReports.Load(),
		"dropped":       in.hub.drops.Load(),
		"published":     in.hub.published.Load(),
		"clients":       int64(in.hub.count()),
	}
	if in.ring != nil {
		n, b := in.ring.Len()
		st["records"], st["bytes"] = int64(n), b
	}
	n, _ := in.requests.len()
	st["requests"] = int64(n)
	writeJSON(w, http.StatusOK, st)
}

// cspReport counts a violation report; its body is read (bounded) and not
// kept.
func (in *Inspector) cspReport(w http.ResponseWriter, r *http.Request) {
	// Same origin only: a page elsewhere (in a browser on this machine)
	// could otherwise count violations and write the log at will.
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		httpError(w, http.StatusForbidden, "cross-site report refused")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			httpError(w, http.StatusForbidden, "cross-origin report refused")
			return
		}
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	if n > 0 {
		total := in.cspReports.Add(1)
		if in.cspLog.allow(time.Now()) {
			in.log.Warn("inspector: Content-Security-Policy violation reported by a page (logged at most once every 10 s)", "reports", total)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// every lets an event through at most once per period.
type every struct {
	mu     sync.Mutex
	period time.Duration
	next   time.Time
}

func (e *every) allow(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Before(e.next) {
		return false
	}
	e.next = now.Add(e.period)
	return true
}

// action runs one of the page's actions on the delivery ?id=.
func (in *Inspector) action(name string, run func(ctx context.Context, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" {
			httpError(w, http.StatusBadRequest, "missing ?id=")
			return
		}
		// The handlers run to their end even when the page goes away.
		ctx := context.WithoutCancel(r.Context())
		err := run(ctx, id)
		in.log.Info("inspector: "+name, "id", id, "error", err)
		switch {
		case errors.Is(err, delivery.ErrNotFound):
			httpError(w, http.StatusNotFound, err.Error())
		case errors.Is(err, delivery.ErrNotDead), errors.Is(err, delivery.ErrUnsupported):
			httpError(w, http.StatusConflict, err.Error())
		case err != nil && name == "replay":
			// The replay ran and its handlers failed: the attempt shows it.
			writeJSON(w, http.StatusOK, map[string]string{"result": "failed", "error": err.Error()})
		case err != nil:
			httpError(w, http.StatusBadGateway, err.Error())
		default:
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		}
	}
}

// events streams changed rows to a page as Server-Sent Events ("row"). A page
// that falls clientBuffer rows behind is sent "dropped" (if it still reads)
// and disconnected; it reconnects and reloads.
func (in *Inspector) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	c, ok := in.hub.subscribe()
	if !ok {
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusServiceUnavailable, "too many pages open, or shutting down")
		return
	}
	defer in.hub.unsubscribe(c)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		// A stuck page must not hold this goroutine: each write has a
		// deadline.
		rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// Opening lines: the reconnection delay, without an event.
	if !write(append(sse.AppendComment(sse.AppendRetry(nil, time.Second), "connected"), '\n')) {
		return
	}
	ping := append(sse.AppendComment(nil, "ping"), '\n')
	var frame []byte
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case msg := <-c.ch:
			var err error
			// msg is JSON from encoding/json, one line without CR: err is nil.
			if frame, err = sse.AppendFrame(frame[:0], sse.Frame{Type: "row", Data: msg}); err != nil || !write(frame) {
				return
			}
		case <-c.gone:
			frame, _ = sse.AppendFrame(frame[:0], sse.Frame{Type: "dropped", Data: []byte("{}")})
			write(frame)
			return
		case <-tick.C:
			if !write(ping) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}
