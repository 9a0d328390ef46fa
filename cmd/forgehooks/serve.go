package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

func cmdServe(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "serve", "forgehooks serve [flags]", `
Run a receiver: verify each delivery posted to --path and log one line for it
(id, event.action, repository, sender, outcome; a rejected delivery's line says
why). SIGINT or SIGTERM stops it, letting running handlers finish.

With --inbox DIR (or --nats URL) each delivery is stored durably before it is
answered 202, and its handlers run from there, retried on failure. With
--catchup-every, serve also asks the forge, once at start and then at each
interval, to redeliver what it missed (see 'forgehooks catchup --help' for the
hook-selection and credential flags, which are then required).

For a first try without a secret of your own, run 'make serve', which passes a
development secret.`)
	addr := fs.String("addr", "127.0.0.1:3000", "address to listen on")
	path := fs.String("path", webhooks.DefaultPath, "URL path that receives deliveries")
	secretF := fs.secretFlag()
	var additional stringList
	fs.Var(&additional, "additional-secret", "another accepted secret, while one is rotated (repeatable)")
	jsonLog := fs.Bool("json", false, "log JSON lines instead of text")
	readHeader := fs.Duration("read-header-timeout", 10*time.Second, "time allowed to read a request's headers")
	read := fs.Duration("read-timeout", 30*time.Second, "time allowed to read a whole request")
	write := fs.Duration("write-timeout", 60*time.Second, "time allowed to answer a request, from the end of its headers")
	idle := fs.Duration("idle-timeout", 120*time.Second, "how long an idle keep-alive connection stays open")
	handlerTimeout := fs.Duration("handler-timeout", webhooks.DefaultTimeout, "how long to wait for handlers before answering 202 (the forge waits 10s)")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long to let requests and handlers finish")
	maxBody := fs.Int64("max-body-bytes", webhooks.DefaultMaxBodyBytes, "largest body accepted (413 above)")
	maxInFlight := fs.Int("max-in-flight", webhooks.DefaultMaxInFlight, "deliveries whose handlers may run at once, answered ones included (503 above; negative: no bound)")
	maxRunning := fs.Int64("max-running-bytes", webhooks.DefaultMaxRunningBytes, "payload bytes of deliveries whose handlers run at once, answered ones included (503 above; negative: no bound)")
	maxUnverified := fs.Int64("max-unverified-bytes", webhooks.DefaultMaxUnverifiedBytes, "bytes of request bodies being read and not yet verified, all requests together (503 above; negative: no bound)")
	exposeErrs := fs.Bool("expose-handler-errors", false, "answer a failed delivery's 500 with the handler's error message (default: a generic message; the log has the error)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics, such as 127.0.0.1:9090 (default: none)")
	uiAddr := fs.String("ui", "", "serve the delivery inspector page at this address, such as 127.0.0.1:3001 (default: off)")
	uiTokenEnv := fs.String("ui-token-env", "", "environment variable holding a token the inspector page requires (needed when --ui is not a loopback address)")
	inboxF := addInboxFlags(fs, true) // --inbox, --nats, --retry-delays, --forward, --fsync: inbox.go
	catchupEvery := fs.Duration("catchup-every", 0, "ask the forge to redeliver what was missed, once at start and then at this interval, such as 6h (default: never); needs --app (with --app-id, --private-key) or --repo/--org with --hook-id and --token-env, as forgehooks catchup does")
	catchupF := addCatchupFlags(fs) // catchup.go
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	secret := fs.secret(*secretF)
	if secret == "" {
		code := fs.noSecret()
		fmt.Fprintln(c.stderr, "To try it locally in a checkout, 'make serve' passes a development secret.")
		return code
	}
	if _, err := inboxF.options(); err != nil {
		return fs.usageError("%v", err)
	}
	cu, code, ok := newServeCatchup(fs, catchupF, *catchupEvery, inboxF.enabled())
	if !ok {
		return code
	}
	log := fs.logger(*jsonLog)
	wh, err := webhooks.New(webhooks.Options{Secret: secret, AdditionalSecrets: additional, Logger: log, KnownEvent: payloads.IsKnownEventName})
	if err != nil {
		return fs.usageError("%v", err)
	}
	var onResult func(webhooks.Result)
	if *metricsAddr != "" {
		ms, err := startMetrics(*metricsAddr, log)
		if errors.Is(err, errMetricsAddr) {
			return fs.usageError("%v", err)
		} else if err != nil {
			return fs.fail("%v", err)
		}
		defer ms.close()
		onResult = ms.Observe
	}
	wh.OnAny(recordDelivery)
	if err := checkUI(c, *uiAddr, *uiTokenEnv); err != nil {
		return fs.usageError("%v", err)
	}
	if c.setup != nil {
		c.setup(wh)
	}
	src := &inboxSource{max: inboxF.attempts()}
	in, err := openServeInbox(ctx, inboxF, wh, log, src.notify)
	if err != nil {
		return fs.fail("%v", err)
	}
	var store webhooks.Inbox // a nil *inbox.Inbox must stay a nil interface
	if in != nil {
		store, src.in = in, in
		defer in.Close(context.Background()) // after the drain below; a no-op then
	} else {
		src = nil
	}
	cu.attach(in, log)
	page, err := newUI(c, wh, log, *uiAddr, *uiTokenEnv, src, cu.redeliver())
	if err != nil {
		return fs.usageError("%v", err)
	}
	if f, prev := page.onResult(), onResult; f != nil && prev != nil {
		onResult = func(r webhooks.Result) { prev(r); f(r) }
	} else if f != nil {
		onResult = f
	}
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{
		Path: *path,
		// The per-delivery line below says why a delivery was rejected; of
		// the middleware's own lines only those with a cause it alone knows
		// (an "error": why the inbox did not store it, a read failure) are
		// kept.
		Logger:       slog.New(withCause{log.Handler()}),
		Timeout:      *handlerTimeout,
		MaxBodyBytes: *maxBody,
		MaxInFlight:  *maxInFlight,
		OnResult:     onResult,
		Inbox:        store,

		MaxRunningBytes:     *maxRunning,
		MaxUnverifiedBytes:  *maxUnverified,
		ExposeHandlerErrors: *exposeErrs,
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fs.fail("cannot listen on %s: %v (is another receiver running there? choose another with --addr)", *addr, err)
	}
	srv := &http.Server{
		Handler:           logDeliveries(mw, *maxInFlight, store != nil, log),
		ReadHeaderTimeout: *readHeader,
		ReadTimeout:       *read,
		WriteTimeout:      *write,
		IdleTimeout:       *idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("forgehooks serve: receiving deliveries", "url", "http://"+ln.Addr().String()+mwPath(*path))
	if c.listening != nil {
		c.listening(ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if err := page.serve(log, served, "http://"+ln.Addr().String()+mwPath(*path)); err != nil {
		srv.Close()
		return fs.fail("%v", err)
	}
	// Catch-up starts once the listener is up: what it has redelivered must
	// find a receiver. It ends before the inbox closes.
	stopCatchup := cu.start(ctx)
	defer stopCatchup()
	select {
	case err := <-served:
		return fs.fail("%v", err)
	case <-ctx.Done():
	}
	stopCatchup()
	log.Info("forgehooks serve: shutting down; letting running handlers finish", "timeout", *shutdown)
	sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	err = errors.Join(page.shutdown(sctx), srv.Shutdown(sctx))
	if in != nil {
		// Running handlers finish until the deadline; the rest run after a restart.
		err = errors.Join(err, in.Close(sctx))
	}
	err = errors.Join(err, wh.Close(sctx))
	if err != nil {
		return fs.fail("shutdown: %v", err)
	}
	return exitOK
}

func mwPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return p
}

// deliveryInfo is what the handlers learn of a verified delivery, for its log
// line: the request's context carries it to recordDelivery.
type deliveryInfo struct {
	mu                       sync.Mutex
	action, repository, user string
}

type infoKey struct{}

// logPaths are the strings of a payload that a delivery's line names, found
// with jsonscan.Lookup in one pass over the bytes: decoding the payload with
// encoding/json to read two strings cost serve twice the CPU per delivery of
// the library it runs.
var logPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

// recordDelivery is serve's handler: it notes the delivery's action, repository
// and sender for the log line.
func recordDelivery(ctx context.Context, e emitter.Event) error {
	info, _ := ctx.Value(infoKey{}).(*deliveryInfo)
	if info == nil {
		return nil
	}
	var found [2]jsonscan.Result
	// A payload without them logs without them; one that is not a JSON object
	// never gets here (the middleware answers 400).
	_ = jsonscan.Lookup(e.Payload, logPaths, found[:])
	info.mu.Lock()
	defer info.mu.Unlock()
	info.action = clip.String(e.Action()) // payload values: any size
	info.repository = clip.String(found[0].String(e.Payload))
	info.user = clip.String(found[1].String(e.Payload))
	return nil
}

// logDeliveries serves mw and logs one line per request: the delivery, and the
// outcome, with the reason of a rejection or failure from the answer's body.
// With an inbox (stored), 202 means stored and 200 a duplicate.
func logDeliveries(mw *webhooks.Middleware, maxInFlight int, stored bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &deliveryInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		if !mw.Handle(rec, r) {
			mw.ServeHTTP(rec, r)
			log.Info("not the webhook path", "method", clip.String(r.Method), "path", clip.String(r.URL.Path), "status", rec.status)
			return
		}
		info.mu.Lock()
		name := clip.String(r.Header.Get(webhooks.HeaderEvent)) // unverified: any size
		if info.action != "" {
			name += "." + info.action
		}
		attrs := []any{"id", clip.String(r.Header.Get(webhooks.HeaderDelivery)), "event", name}
		if !stored {
			// With an inbox the handlers run later: the line of each attempt
			// names the repository and sender.
			attrs = append(attrs, "repository", info.repository, "sender", info.user)
		}
		attrs = append(attrs, "status", rec.status, "duration", time.Since(start).Round(time.Microsecond))
		info.mu.Unlock()
		if !stored && (rec.status == http.StatusAccepted || rec.status == http.StatusServiceUnavailable) {
			// Handlers that outlive their answer hold a place until they return;
			// the count shows hanging handlers before deliveries are refused.
			attrs = append(attrs, "in_flight", mw.InFlight(), "max_in_flight", maxInFlight)
		}
		switch {
		case stored && rec.status == http.StatusAccepted:
			log.Info("delivery stored", attrs...)
		case stored && rec.status == http.StatusOK:
			log.Info("duplicate delivery", attrs...)
		case rec.status == http.StatusAccepted && maxInFlight > 0 && 2*mw.InFlight() >= maxInFlight:
			log.Warn("delivery accepted; handlers still running; half the in-flight places are taken", attrs...)
		case rec.status == http.StatusAccepted:
			log.Info("delivery accepted; handlers still running", attrs...)
		case rec.status < 300:
			log.Info("delivery ok", attrs...)
		case rec.status < 500:
			log.Warn("delivery rejected: "+clip.String(rec.reason()), attrs...)
		default:
			log.Error("delivery failed: "+clip.String(rec.reason()), attrs...)
		}
	})
}

// recorder keeps the status and the start of an error answer's body. It
// neither flushes nor unwraps, on purpose: the middleware then runs the
// handlers on another goroutine and returns with its 202 at the timeout, so
// that the delivery's line is written when it is answered, not when its
// handlers end (see webhooks.Middleware).
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status >= 300 && r.body.Len() < 1024 {
		r.body.Write(p[:min(len(p), 1024-r.body.Len())])
	}
	return r.ResponseWriter.Write(p)
}

// SetReadDeadline lets the middleware hold a body to its minimum rate
// (http.ResponseController finds it here, as recorder does not unwrap).
func (r *recorder) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(r.ResponseWriter).SetReadDeadline(t)
}

// withCause passes on the records that carry an "error" attribute and drops
// the others: serve's own line per delivery says the rest.
type withCause struct{ slog.Handler }

func (h withCause) Handle(ctx context.Context, r slog.Record) error {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "error"
		return !found
	})
	if !found {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h withCause) WithAttrs(as []slog.Attr) slog.Handler { return withCause{h.Handler.WithAttrs(as)} }
func (h withCause) WithGroup(name string) slog.Handler    { return withCause{h.Handler.WithGroup(name)} }

// reason is the error message of a JSON error answer, or its text.
func (r *recorder) reason() string {
	var e struct{ Error string }
	if json.Unmarshal(r.body.Bytes(), &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(r.body.String())
}

// ui is serve's inspector page (--ui), nil when off.
type ui struct {
	insp *inspector.Inspector
	addr string
	srv  *http.Server
}

// checkUI checks --ui and --ui-token-env: a non-loopback address needs a
// token.
func checkUI(c *cli, addr, tokenEnv string) error {
	if addr == "" {
		if tokenEnv != "" {
			return errors.New("--ui-token-env needs --ui")
		}
		return nil
	}
	if tokenEnv != "" && c.getenv(tokenEnv) == "" {
		return fmt.Errorf("--ui-token-env %s: the variable is unset or empty", tokenEnv)
	}
	if tokenEnv == "" && !inspector.IsLoopbackAddr(addr) {
		return fmt.Errorf("--ui %s is not a loopback address: anyone who reaches it would read the deliveries; give --ui-token-env VAR with a token, or a 127.0.0.1 address", addr)
	}
	return nil
}

// newUI makes the inspector page of --ui (nil without it). With src (serve's
// inbox), the page shows the inbox; with redeliver (catch-up configured), it
// can ask the forge to redeliver.
func newUI(c *cli, wh *webhooks.Webhooks, log *slog.Logger, addr, tokenEnv string, src *inboxSource, redeliver func(context.Context, string) error) (*ui, error) {
	if err := checkUI(c, addr, tokenEnv); err != nil || addr == "" {
		return nil, err
	}
	token := ""
	if tokenEnv != "" {
		token = c.getenv(tokenEnv)
	}
	var source inspector.Source // a nil *inboxSource must stay a nil interface
	if src != nil {
		source = src
	}
	return &ui{addr: addr, insp: inspector.New(inspector.Options{
		Webhooks: wh, Token: token, Logger: log, Source: source, Redeliver: redeliver,
		TypeName: func(event, _ string, payload []byte) string {
			if p, err := payloads.Parse(event, payload); err == nil {
				return fmt.Sprintf("%T", p)
			}
			return ""
		},
	})}, nil
}

func (u *ui) onResult() func(webhooks.Result) {
	if u == nil {
		return nil
	}
	return u.insp.OnResult
}

// serve listens on --ui; a failure of its server ends serve through failed.
// hookURL is where the receiver listens, for the page's commands.
func (u *ui) serve(log *slog.Logger, failed chan<- error, hookURL string) error {
	if u == nil {
		return nil
	}
	u.insp.SetWebhookURL(hookURL)
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		return fmt.Errorf("--ui: cannot listen on %s: %v", u.addr, err)
	}
	// No write timeout: the page's event stream stays open.
	u.srv = &http.Server{Handler: u.insp, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	u.srv.RegisterOnShutdown(u.insp.Close)
	log.Info("forgehooks serve: inspector page", "url", "http://"+ln.Addr().String()+"/")
	go func() {
		if err := u.srv.Serve(ln); err != http.ErrServerClosed {
			select {
			case failed <- fmt.Errorf("--ui: %v", err):
			default: // serve is ending anyway
			}
		}
	}()
	return nil
}

func (u *ui) shutdown(ctx context.Context) error {
	if u == nil || u.srv == nil {
		return nil
	}
	return u.srv.Shutdown(ctx)
}
