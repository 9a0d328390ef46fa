package webhooks

import (
	"forgehooks.dev/forgehooks/internal/waitroom"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Defaults of MiddlewareOptions.
const (
	// DefaultPath is where the middleware receives deliveries.
	DefaultPath = "/api/forge/webhooks"
	// DefaultTimeout is how long the middleware waits for handlers before it
	// answers 202: the forge gives up after 10 seconds.
	DefaultTimeout = 9 * time.Second
	// DefaultMaxBodyBytes is the largest body accepted: 25 MiB, the forge's own
	// limit for a delivery.
	DefaultMaxBodyBytes = 25 << 20
	// DefaultMaxInFlight is how many verified deliveries may have handlers
	// running at once, per Middleware, before new ones are answered 503. It is
	// far above what a receiver whose handlers return needs, and low enough
	// that handlers which hang cannot exhaust memory one delivery at a time.
	DefaultMaxInFlight = 1024
	// DefaultMaxUnverifiedBytes is the budget of bodies being read and not
	// yet verified, across all connections of a Middleware: room for two
	// bodies of the forge's largest size, or thousands of ordinary ones at
	// once, while a flood of forged bodies costs at most this much memory.
	DefaultMaxUnverifiedBytes = 64 << 20
	// DefaultMaxRunningBytes is the budget of payload bytes of verified
	// deliveries whose handlers are running, those answered 202 included.
	DefaultMaxRunningBytes = 64 << 20
	// RetryAfter is the Retry-After header, in seconds, of a 503 answer.
	RetryAfter = 10
)

// The headers a delivery must carry, in the order the 400 answer names them.
const (
	// HeaderEvent carries the event name, such as "issues".
	HeaderEvent = "X-Forge-Event"
	// HeaderSignature carries the body's signature, "sha256=" and 64 hex digits.
	HeaderSignature = "X-Hub-Signature-256"
	// HeaderDelivery carries the delivery's unique id.
	HeaderDelivery = "X-Forge-Delivery"
)

// MiddlewareOptions configures NewMiddleware. The zero value gives the defaults.
type MiddlewareOptions struct {
	// Path is the URL path deliveries are posted to. Default DefaultPath. A
	// missing leading slash is added; trailing slashes are ignored. A
	// segment "{name}" matches any one segment and sets the request's path
	// value name, as http.ServeMux does: "/t/{tenant}/hooks" with
	// Options.Tenants.
	Path string
	// Logger gets one line per rejected request, with the reason. Nil: the
	// Webhooks' logger.
	Logger *slog.Logger
	// Timeout is how long to wait for the handlers before answering 202 while
	// they go on. Zero: DefaultTimeout. Negative: wait for them however long.
	Timeout time.Duration
	// MaxBodyBytes is the largest body accepted (413 above it). Zero or negative:
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInFlight bounds the verified deliveries whose handlers are running at
	// once, counting those answered 202 whose handlers go on. A delivery past
	// the bound is answered 503 with a Retry-After header and is not
	// dispatched, and the refusal is logged: handlers that never return hold at
	// most MaxInFlight deliveries (their goroutines and bodies), not one per
	// request. Requests still being read or verified take no place (see
	// MaxUnverifiedBytes). The count is the Webhooks' (InFlight), shared with
	// every Middleware serving it. Zero: DefaultMaxInFlight. Negative: no
	// bound.
	MaxInFlight int
	// MaxRunningBytes bounds the payload bytes of those deliveries as
	// MaxInFlight bounds their number: a delivery that would pass it is
	// answered 503 with Retry-After, unless no other is running. Zero:
	// DefaultMaxRunningBytes. Negative: no bound.
	MaxRunningBytes int64
	// MaxUnverifiedBytes is the budget of request bodies being read and not
	// yet verified, across all connections of this Middleware. A body is
	// charged for the buffer it has grown into as its bytes arrive (at most
	// four times the bytes received), not for the Content-Length it
	// announces, until it passes 1 MiB; then it takes its whole length. A
	// quarter of the budget (at most 8 MiB) is kept for bodies of at most
	// 1 MiB, and one client address holds at most half of it (but for the
	// first 80 KiB of each body). A body with a Content-Length that does
	// not fit waits up to 5 s for room, then is answered 503 with
	// Retry-After (and Connection: close); one without (chunked) waits for
	// nothing: the rest of it is read and thrown away, so that it is
	// answered 413 as soon as it passes MaxBodyBytes, and 503 at its end
	// otherwise. See SECURITY.md. Zero:
	// DefaultMaxUnverifiedBytes. Negative: no bound.
	MaxUnverifiedBytes int64
	// MinBodyRate is the slowest a request body may arrive, in bytes per
	// second, measured over each 10 s window (a window must bring
	// MinBodyRate × 10 s bytes, or the rest of the body): a slower body is
	// cut with 408 and its share of MaxUnverifiedBytes given back, so that
	// senders that trickle bytes cannot hold the budget. It needs a
	// ResponseWriter whose read deadline http.ResponseController can set
	// (net/http's, and wrappers with Unwrap); with another, the rate is
	// checked between reads only. Zero: DefaultMinBodyRate. Negative: no
	// minimum.
	MinBodyRate int64
	// Inbox, when set, stores each verified delivery durably instead of
	// running its handlers during the request; see Inbox for the answers.
	// The inbox runs the handlers later.
	Inbox Inbox
	// ExposeHandlerErrors, when true, makes the body of a failed delivery's
	// answer the first handler error's message, as the original library
	// does. False (the default): a generic message, unless that error was
	// given a status with WithStatus (or has an HTTPStatus method), whose
	// message is then meant for the sender. The forge shows the body in its
	// delivery log, to everyone who can see the hook's settings, and an
	// error's text often holds what they should not see (a database address,
	// a token, a file path); the log of the receiver always has it.
	ExposeHandlerErrors bool
	// Inline, when true, makes sure no work of a delivery outlives its
	// answer, for platforms that freeze or stop the process once a request is
	// answered (AWS Lambda, Cloud Functions, Cloud Run without CPU outside
	// requests). Without an Inbox the handlers run inside the request and the
	// answer waits for them however long they take: 200 when they succeed, the
	// failure's status (500 unless WithStatus says otherwise) when one fails,
	// so that the forge's log marks the delivery failed and it can be
	// redelivered; never the 202 of Timeout. With an Inbox the delivery is
	// stored before the answer, as without Inline, and no handler runs in this
	// process. Error handlers (OnError) told of a failed or forged delivery
	// run before the answer too. The handlers' context is the request's, with
	// its deadline (a function's timeout) and cancellation; once the answer
	// is written, it is canceled with cause ErrAnswered, and a dispatch under it
	// (Webhooks.Receive or VerifyAndReceive from a goroutine a handler left
	// behind) runs no handler and returns ErrAnswered.
	//
	// NewMiddleware refuses (panics at) what would leave work running after
	// the answer: Inline without an Inbox and with a positive Timeout, and
	// Inline with an Inbox that runs workers in this process (one whose
	// RunsWorkers method, see WorkerInbox, reports true). With an Inbox,
	// Timeout bounds the store as it does without Inline.
	Inline bool
	// OnResult, when set, is called once for every request the middleware
	// handles (not for those of other paths), after its answer was written
	// and its handlers, if any, returned: for a 202 of the timeout, when they
	// return. It runs on the goroutine that finished last and must not block
	// for long; it must not keep Result.Payload beyond the call unless it
	// copies it.
	OnResult func(Result)
	// Accept, when set, is the filter of verified deliveries (ParseAccept):
	// one it does not accept is answered 200 "ignored" (Result.Ignored),
	// and is neither stored by Inbox nor run.
	Accept *Accept
	// AcceptHandled, when true, ignores as Accept does each verified
	// delivery that no handler is registered for (an OnAny handler takes
	// them all), so that an Inbox stores only what some handler will run.
	AcceptHandled bool
}

// Middleware receives deliveries over HTTP on one path, verifies them and
// dispatches them to a Webhooks. It answers as the README's status table says.
// It is safe for concurrent use.
//
// Over HTTP/1 a delivery's handlers run on the request's goroutine, and
// ServeHTTP (or Handle) returns when they have: when they outlast Timeout, the
// 202 is written and flushed from a timer's goroutine meanwhile, with
// "Connection: close", so that the client's next request does not wait behind
// them on that connection. Over HTTP/2, and with a ResponseWriter that cannot
// flush, the handlers run on another goroutine and ServeHTTP returns with the
// 202. (Running them on the request's goroutine spares two goroutine switches
// per delivery.)
type Middleware struct {
	w             *Webhooks
	path          string    // without trailing slashes; "" for "/"
	wild          []segment // the path's segments when it has wildcards; nil otherwise
	logger        *slog.Logger
	timeout       time.Duration
	max           int64
	maxInFlight   int64            // 0: no bound
	maxRunning    int64            // 0: no bound
	unverified    *waitroom.Budget // nil: no bound
	minRate       int64            // bytes per second; 0: no minimum
	window        time.Duration    // over which minRate is measured
	workers       workers          // run each accepted delivery's handlers
	inbox         Inbox
	onResult      func(Result)
	exposeErrs    bool
	accept        *Accept
	acceptHandled bool
	inline        bool // MiddlewareOptions.Inline
}

// NewMiddleware returns a Middleware serving w. It panics when w is nil.
//
// Serve it from an http.Server with timeouts, so that clients that send
// slowly are cut off, and shut down in two steps, so that no acknowledged
// delivery is lost:
//
//	srv := &http.Server{
//		Addr:              "127.0.0.1:3000",
//		Handler:           webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}),
//		ReadHeaderTimeout: 10 * time.Second,
//		ReadTimeout:       30 * time.Second,
//		IdleTimeout:       2 * time.Minute,
//	}
//	go srv.ListenAndServe()
//	// … on SIGINT or SIGTERM:
//	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	srv.Shutdown(ctx) // answers the requests in progress
//	wh.Close(ctx)     // waits for handlers answered 202; logs the ids of those it gives up on
func NewMiddleware(w *Webhooks, opts MiddlewareOptions) *Middleware {
	if w == nil {
		panic("webhooks: NewMiddleware with a nil *Webhooks")
	}
	m := &Middleware{w: w, logger: opts.Logger, timeout: opts.Timeout, max: opts.MaxBodyBytes, workers: newWorkers(), inbox: opts.Inbox, onResult: opts.OnResult, exposeErrs: opts.ExposeHandlerErrors, accept: opts.Accept, acceptHandled: opts.AcceptHandled}
	path := opts.Path
	if path == "" {
		path = DefaultPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	m.path = strings.TrimRight(path, "/")
	m.wild = parsePattern(m.path)
	if m.logger == nil {
		m.logger = w.Logger()
	}
	if m.timeout == 0 {
		m.timeout = DefaultTimeout
	}
	if m.max <= 0 {
		m.max = DefaultMaxBodyBytes
	}
	m.maxInFlight = orDefault(int64(opts.MaxInFlight), DefaultMaxInFlight)
	m.maxRunning = orDefault(opts.MaxRunningBytes, DefaultMaxRunningBytes)
	if n := orDefault(opts.MaxUnverifiedBytes, DefaultMaxUnverifiedBytes); n > 0 {
		m.unverified = newBudget(n)
	}
	m.minRate, m.window = orDefault(opts.MinBodyRate, DefaultMinBodyRate), rateWindow
	if opts.Inline {
		m.checkInline(opts)
	}
	return m
}

// orDefault returns def for a zero bound, 0 (no bound) for a negative one,
// and the bound itself otherwise.
func orDefault(bound, def int64) int64 {
	switch {
	case bound == 0:
		return def
	case bound < 0:
		return 0
	}
	return bound
}

// InFlight reports how many deliveries the Webhooks has taken on whose
// handlers have not all returned yet (those of every Middleware serving it,
// and of VerifyAndReceive and Receive): the number MaxInFlight bounds.
func (m *Middleware) InFlight() int {
	n, _ := m.w.inFlight.load()
	return int(n)
}

// ServeHTTP handles a request for the middleware's path and answers any other
// with 404 and a JSON error, so that the Middleware can be a server's handler.
// The 404 is logged as a warning naming MiddlewareOptions.Path: a Middleware
// mounted under a router's pattern that differs from Path answers every
// delivery so; mount AnyPath there instead.
func (m *Middleware) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !m.Handle(rw, r) {
		m.notFound(rw, r)
	}
}

// Handle handles r when it is for the middleware's path, and reports whether it
// was. When it returns false it has written nothing, so the caller may answer.
func (m *Middleware) Handle(rw http.ResponseWriter, r *http.Request) bool {
	if !m.matches(r) {
		return false
	}
	m.handle(rw, r)
	return true
}

// AnyPath returns a handler that takes every request it is given as a
// delivery, whatever its path: for mounting under a router that has matched
// the path (and the method) already, with any pattern, wildcards included.
// MiddlewareOptions.Path plays no part in it.
//
//	mux := http.NewServeMux()
//	mux.Handle("POST /t/{tenant}/hooks", mw.AnyPath())
//	// chi: r.Post("/t/{tenant}/hooks", mw.AnyPath().ServeHTTP)
//
// Tenants with secrets of their own share one Webhooks with Options.Tenants,
// which reads the tenant from the router's path value.
func (m *Middleware) AnyPath() http.Handler { return anyPath{m} }

type anyPath struct{ m *Middleware }

func (a anyPath) ServeHTTP(rw http.ResponseWriter, r *http.Request) { a.m.handle(rw, r) }

// handle serves r as a delivery, whatever its path.
func (m *Middleware) handle(rw http.ResponseWriter, r *http.Request) {
	if m.onResult == nil {
		m.serve(rw, r, nil)
		return
	}
	oc := &outcome{m: m, start: time.Now()}
	oc.res.Header = r.Header
	oc.res.ID = r.Header.Get(HeaderDelivery)
	oc.res.Name = r.Header.Get(HeaderEvent)
	oc.res.ReceivedAt = oc.start
	oc.left.Store(1)
	m.serve(&statusWriter{ResponseWriter: rw, oc: oc}, r, oc)
	oc.done()
}

// Wrap returns a handler that serves the middleware's path and passes every
// other request to next (a nil next answers 404), for routers that take
// func(http.Handler) http.Handler middleware.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if m.Handle(rw, r) {
			return
		}
		if next == nil {
			m.notFound(rw, r)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// matches reports whether r is for the middleware's path. The path is
// compared decoded (so /api/forge/web%68ooks matches) and byte for byte
// after trailing slashes are dropped; the query does not count. It is not
// cleaned: "..", "." and doubled slashes do not match. An encoded slash
// (%2F) never matches, because decoded it would turn one segment into two.
// A segment "{name}" of the path matches any one non-empty segment, which
// becomes r's path value name (r.PathValue).
func (m *Middleware) matches(r *http.Request) bool {
	u := r.URL
	if u == nil {
		return false
	}
	if u.RawPath != "" && strings.Contains(strings.ToLower(u.RawPath), "%2f") {
		return false
	}
	p := strings.TrimRight(u.Path, "/")
	if m.wild == nil {
		return p == m.path
	}
	segs := strings.Split(p, "/")
	if len(segs) != len(m.wild) {
		return false
	}
	for i, w := range m.wild {
		switch {
		case w.name == "" && segs[i] != w.lit:
			return false
		case w.name != "" && segs[i] == "":
			return false
		}
	}
	for i, w := range m.wild {
		if w.name != "" {
			r.SetPathValue(w.name, segs[i])
		}
	}
	return true
}

// segment is one segment of a Path with wildcards: a literal, or a
// wildcard's name.
type segment struct{ lit, name string }

// parsePattern splits a path into segments when it holds a wildcard
// ("{name}", a whole segment); nil otherwise.
func parsePattern(path string) []segment {
	if !strings.Contains(path, "{") {
		return nil
	}
	parts := strings.Split(path, "/")
	out := make([]segment, len(parts))
	for i, s := range parts {
		if len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' {
			out[i].name = s[1 : len(s)-1]
		} else {
			out[i].lit = s
		}
	}
	return out
}
