// Package receiver is what 'forgehooks serve' is, as a library: from one
// Options, a receiver with the webhook middleware, a durable inbox (embedded
// or in a NATS cluster), the inspector page over it, catch-up of missed
// deliveries, Prometheus metrics (HTTP answers and the inbox's attempts) and
// an orderly drain.
//
// Run serves everything on the addresses Options names and drains when its
// context ends. A program with a router of its own mounts Handler, Inspector
// and Metrics on it instead, and calls Run without addresses, which then runs
// catch-up and waits for the context to drain:
//
//	r, err := receiver.New(ctx, receiver.Options{Webhooks: wh, Inbox: &inbox.Options{Dir: "inbox"}})
//	mux.Handle("/api/forge/webhooks", r.Handler())
//	err = r.Run(ctx) // until ctx is done; then drains
//
// Ingest and workers scale apart over a NATS cluster: receivers with
// IngestOnly store deliveries and run none, and RunWorker, in any number of
// other processes, runs them with no HTTP endpoint.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/internal/deliverylog"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

// Defaults of Options.
const (
	DefaultDrainTimeout   = 30 * time.Second
	DefaultForwardTimeout = 30 * time.Second
	// DefaultMaxConns is the most connections Run's webhook server keeps
	// open by default: far more than the forge opens at once, while a
	// flood of idle connections holds at most this many file descriptors
	// and their buffers (about 20 KiB each). Under a lower descriptor limit
	// the default is lower (see Options.MaxConns).
	DefaultMaxConns = 4096
)

// Options configures a Receiver. Only Webhooks is required; every other zero
// value leaves its part out or takes its default.
type Options struct {
	// Webhooks holds the handlers. Required. New adds two handlers to it
	// with OnAny (one notes each delivery's repository and sender for its
	// log line; the other is Forward's, when set), and the Receiver closes it
	// when it drains.
	Webhooks *webhooks.Webhooks
	// Middleware configures the webhook endpoint (Path, Timeout, the body
	// and concurrency bounds). Its Inbox is set by New; its OnResult, when
	// set, is called after the Receiver's own; its Logger defaults to
	// Logger.
	Middleware webhooks.MiddlewareOptions
	// Inbox, when set, stores each delivery durably before it is answered
	// 202 and, once Run starts, runs the handlers from there (see package
	// inbox). Its Receiver and Logger are set by New. An embedded inbox (Dir) also answers the
	// command line on a socket in Dir while the Receiver runs, so that
	// 'forgehooks inbox' works on it.
	Inbox *inbox.Options
	// IngestOnly, with an Inbox in a NATS cluster (URLs), makes this a
	// receiver that takes deliveries in and stores them, and runs none: Run
	// starts no worker, and processes of RunWorker ('forgehooks work')
	// sharing the inbox run them. Its metrics are named
	// "forgehooks_ingest_…" unless Metrics.Namespace says otherwise.
	IngestOnly bool
	// Forward, when set, is an http(s) URL every delivery is re-POSTed to,
	// with its original headers and body (see inbox.Forward); a non-2xx
	// answer fails the attempt. New checks it.
	Forward string
	// ForwardClient posts to Forward. Nil: a client with a
	// DefaultForwardTimeout timeout.
	ForwardClient *http.Client
	// Inspector, when set, makes the inspector page (Receiver.Inspector) over
	// the inbox, or over an in-memory ring without one. Its Store, Webhooks,
	// Redeliver (with Catchup) and Logger are set by New.
	Inspector *inspector.Options
	// Metrics, when set, makes the Prometheus metrics (Receiver.Metrics):
	// the HTTP answers and, with an inbox, its attempts, retries, dead
	// letters, backlog and handler durations.
	Metrics *metrics.Options
	// Catchup, when set with CatchupEvery > 0, asks the forge to redeliver
	// what it missed, once when Run starts and then every CatchupEvery. With
	// an inbox its Holder and Checkpoints are the inbox; its Logger is set.
	Catchup      *catchup.Options
	CatchupEvery time.Duration
	// Logger gets the receiver's lines: one per request, one per finished
	// attempt of a stored delivery. With an inbox whose workers run here
	// (not IngestOnly) a stored delivery's request line ("delivery
	// stored") is at debug level: its run's line is the one at info.
	// Nil: Webhooks' logger.
	Logger *slog.Logger

	// Addr, InspectorAddr and MetricsAddr are where Run listens for
	// deliveries, the page and the metrics ("host:port"; port 0 picks one).
	// Empty: Run does not serve that part (mount the handler yourself).
	Addr, InspectorAddr, MetricsAddr string
	// Server, when set, gives Run's servers their timeouts (ReadTimeout,
	// WriteTimeout...); the page's server keeps no write timeout (its event
	// stream stays open). Nil: 10 s to read headers, 30 s for a request,
	// 60 s to answer, 120 s idle.
	Server *http.Server
	// MaxConns bounds the open connections of each of Run's servers. Past
	// it, a new connection closes the one idle longest (a keep-alive
	// connection between requests), else the one waiting longest for its
	// first request; a connection with a request in progress is never
	// closed, and while those alone fill the bound new connections wait
	// for one to end. So a flood of idle connections leaves fresh
	// deliveries answered. If accept fails for want of a descriptor
	// (EMFILE), the idle connection longest idle is closed and accept
	// tried again. Zero: bounds chosen from the process's descriptor limit
	// (RLIMIT_NOFILE), less a reserve for the rest of the process (an
	// eighth, at least 256): the webhook server DefaultMaxConns or, under
	// a lower limit, what is left after the inspector's and the metrics'
	// (256 each, or a sixteenth of what is left); Run logs the bound.
	// Negative: no bound.
	MaxConns int
	// OnListen, when set, is told each address Run listens on: "webhooks",
	// "inspector" or "metrics", and the address.
	OnListen func(part, addr string)
	// Wrap, when set, wraps the webhook endpoint (Handler), such as
	// sourceip.Filter's Wrap, which refuses requests from outside the
	// forge's ranges before the endpoint reads them.
	Wrap func(http.Handler) http.Handler
	// DrainTimeout bounds the drain: requests and running handlers finish
	// until then; deliveries of an inbox not finished run after a restart.
	// Zero: DefaultDrainTimeout. Negative: no bound (wait for them).
	DrainTimeout time.Duration
}

// OptionError reports a bad value of an Option: Field names it ("Addr",
// "Forward"...).
type OptionError struct {
	Field string
	Err   error
}

func (e *OptionError) Error() string { return "receiver: Options." + e.Field + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Receiver is a running receiver: see New. Its methods are safe for
// concurrent use.
type Receiver struct {
	opts    Options
	log     *slog.Logger
	wh      *webhooks.Webhooks
	mw      *webhooks.Middleware
	handler http.Handler
	anyPath http.Handler // Handler's twin for a router's pattern
	in      *inbox.Inbox
	admin   func() // stops the admin socket
	page    *inspector.Inspector
	metrics *metrics.Metrics
	stops   []func()

	mu       sync.Mutex
	hookAddr string // where Run listens for deliveries, once it does
}

// New checks opts, opens the inbox and builds the middleware, the page and
// the metrics. No handler runs before Run: the inbox takes deliveries in
// from New on, and its workers start in Run. Call Run, or Close when Run is
// not called.
func New(ctx context.Context, opts Options) (*Receiver, error) {
	if opts.Webhooks == nil {
		return nil, &OptionError{"Webhooks", errors.New("required")}
	}
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	r := &Receiver{opts: opts, wh: opts.Webhooks, log: opts.Logger}
	if r.log == nil {
		r.log = r.wh.Logger()
	}
	if opts.Forward != "" {
		client := opts.ForwardClient
		if client == nil {
			client = &http.Client{Timeout: DefaultForwardTimeout}
		}
		r.wh.OnAny(inbox.Forward(opts.Forward, client))
		r.log.Info("forgehooks: forwarding each delivery", "forward", opts.Forward)
	}
	r.wh.OnAny(deliverylog.Note)
	if opts.Metrics != nil {
		mo := *opts.Metrics
		if opts.IngestOnly && mo.Namespace == "" {
			mo.Namespace = IngestNamespace
		}
		r.metrics = metrics.New(mo)
	}
	if opts.Inbox != nil {
		o := *opts.Inbox
		o.Receiver = r.wh
		if o.Logger == nil {
			o.Logger = r.log
		}
		in, err := inbox.Open(ctx, o)
		if err != nil {
			return nil, err
		}
		r.in = in
		r.stops = append(r.stops, in.Watch(r.attemptLine))
		if r.metrics != nil {
			r.stops = append(r.stops, in.Watch(r.metrics.ObserveAttempt))
			r.metrics.SetInbox(inboxStats(in))
		}
		attrs := []any{"store", o.Dir}
		if o.Dir == "" {
			attrs = []any{"store", inbox.RedactURL(strings.Join(o.URLs, ",")), "replicas", in.Replicas()}
		}
		delays := o.RetryDelays
		if delays == nil {
			delays = inbox.DefaultRetryDelays
		}
		r.log.Info("forgehooks: durable inbox", append(attrs, "retry_delays", fmt.Sprint(delays))...)
		if o.Dir != "" {
			stop, err := in.ServeAdmin(r.log)
			if err != nil {
				r.log.Warn("forgehooks: no admin socket: 'forgehooks inbox' cannot reach this inbox while it runs", "error", err)
			}
			r.admin = stop
		}
	}
	if opts.Inspector != nil {
		po := *opts.Inspector
		if r.in != nil {
			po.Store = r.in
		}
		po.Webhooks = r.wh
		if po.Logger == nil {
			po.Logger = r.log
		}
		if opts.Catchup != nil && opts.CatchupEvery > 0 {
			po.Redeliver = r.redeliver
		}
		r.page = inspector.New(po)
	}
	if opts.Catchup != nil {
		c := *opts.Catchup // the caller's stays as given
		if r.in != nil {
			c.Holder = r.in
			c.Checkpoints = catchup.StoreCheckpoints{Store: r.in}
		}
		r.opts.Catchup = &c
	}
	mo := opts.Middleware
	if r.in != nil {
		mo.Inbox = r.in
	}
	user := mo.OnResult
	mo.OnResult = func(res webhooks.Result) {
		r.logResult(res)
		if r.metrics != nil {
			r.metrics.Observe(res)
		}
		if r.page != nil {
			r.page.OnResult(res)
		}
		if user != nil {
			user(res)
		}
	}
	if mo.Logger == nil {
		// The receiver's line for each request says why it was refused, a
		// 5xx with its cause (logResult); the middleware's own lines would
		// say it twice.
		mo.Logger = slog.New(slog.DiscardHandler)
	}
	r.mw = webhooks.NewMiddleware(r.wh, mo)
	r.handler = r.logRequests(mo.MaxInFlight, false)
	r.anyPath = r.logRequests(mo.MaxInFlight, true)
	if opts.Wrap != nil {
		r.handler = opts.Wrap(r.handler)
	}
	return r, nil
}

// checkOptions checks the addresses and the forward URL, so that a typo
// fails at start rather than as a connection refused, or retries for days.
func checkOptions(o *Options) error {
	for _, a := range []struct{ field, addr string }{{"Addr", o.Addr}, {"InspectorAddr", o.InspectorAddr}, {"MetricsAddr", o.MetricsAddr}} {
		if a.addr == "" {
			continue
		}
		if err := CheckListenAddr(a.addr); err != nil {
			return &OptionError{a.field, err}
		}
	}
	if o.Forward != "" {
		if err := CheckURL(o.Forward); err != nil {
			return &OptionError{"Forward", err}
		}
	}
	if o.Inspector != nil && o.InspectorAddr != "" && o.Inspector.Token == "" && !inspector.IsLoopbackAddr(o.InspectorAddr) {
		return &OptionError{"InspectorAddr", fmt.Errorf("%s is not a loopback address: anyone who reaches it would read the deliveries; set Inspector.Token, or use a 127.0.0.1 address", o.InspectorAddr)}
	}
	if o.IngestOnly && (o.Inbox == nil || len(o.Inbox.URLs) == 0) {
		return &OptionError{"IngestOnly", errors.New("needs an Inbox in a NATS cluster (URLs): the workers of another process must reach it, and an embedded inbox's directory opens in one process at a time")}
	}
	if o.CatchupEvery < 0 {
		return &OptionError{"CatchupEvery", fmt.Errorf("%v: want a positive interval", o.CatchupEvery)}
	}
	return nil
}

// CheckURL checks that s is an http(s) URL with a host and, if it names one,
// a port from 1 to 65535.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q: %v (a URL such as http://127.0.0.1:3000/path; a port is 1 to 65535)", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return fmt.Errorf("%q is not an http(s) URL, such as http://127.0.0.1:3000/path", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not a number from 1 to 65535", s, p)
		}
	}
	return nil
}

// CheckListenAddr checks that addr is host:port with a port from 0 to 65535
// (0 picks a free one).
func CheckListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port, such as 127.0.0.1:3001 (%v)", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535 (0 picks a free port)", addr, port)
	}
	return nil
}

// Handler is the webhook endpoint: the middleware at Options.Middleware.Path
// (other paths answer 404), logging one line per request.
func (r *Receiver) Handler() http.Handler { return r.handler }

// AnyPath is Handler for a router's pattern: it takes every request it is
// given as a delivery, whatever its path (see webhooks.Middleware.AnyPath),
// and logs one line per request as Handler does. Options.Wrap does not
// apply to it.
//
//	mux.Handle("POST /t/{tenant}/hooks", r.AnyPath())
func (r *Receiver) AnyPath() http.Handler { return r.anyPath }

// Middleware is the webhook middleware itself, for Wrap or Handle on a
// router; it logs no line per request.
func (r *Receiver) Middleware() *webhooks.Middleware { return r.mw }

// Inspector is the inspector page, an http.Handler to mount at a path of its
// own (with http.StripPrefix); nil without Options.Inspector.
func (r *Receiver) Inspector() *inspector.Inspector { return r.page }

// Metrics serves the Prometheus metrics; nil without Options.Metrics.
func (r *Receiver) Metrics() *metrics.Metrics { return r.metrics }

// Inbox is the durable inbox; nil without Options.Inbox.
func (r *Receiver) Inbox() *inbox.Inbox { return r.in }

// Store is where the stored deliveries are read: the inbox, or the page's
// in-memory ring; nil with neither.
func (r *Receiver) Store() delivery.Store {
	switch {
	case r.in != nil:
		return r.in
	case r.page != nil:
		return r.page.Ring()
	}
	return nil
}

// redeliver is the page's Redeliver: ask the forge to send one delivery again.
func (r *Receiver) redeliver(ctx context.Context, id string) error {
	_, err := catchup.RedeliverGUID(ctx, *r.opts.Catchup, id)
	if errors.Is(err, catchup.ErrNotInLog) {
		return fmt.Errorf("%w: %w", delivery.ErrNotFound, err)
	}
	return err
}

// MemoryLimit is a soft memory limit (runtime/debug.SetMemoryLimit) that
// the bounds of o imply: the unverified and running bytes of the middleware,
// and room for the rest, more with an inbox (the embedded server keeps the
// files it read in a cache that the garbage collector takes back only when
// memory grows; the limit makes it do so in time). 'forgehooks serve' sets
// it unless GOMEMLIMIT does.
func MemoryLimit(o Options) int64 {
	unverified := o.Middleware.MaxUnverifiedBytes
	if unverified == 0 {
		unverified = webhooks.DefaultMaxUnverifiedBytes
	}
	running := o.Middleware.MaxRunningBytes
	if running == 0 {
		running = webhooks.DefaultMaxRunningBytes
	}
	limit := max(unverified, 0) + max(running, 0) + 64<<20
	if o.Inbox != nil {
		limit += 32 << 20
	}
	return limit
}
