package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
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
	// missing leading slash is added; trailing slashes are ignored.
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
	// request. Requests still being read or verified take no place. Zero:
	// DefaultMaxInFlight. Negative: no bound.
	MaxInFlight int
	// Inbox, when set, stores each verified delivery durably instead of
	// running its handlers during the request; see Inbox for the answers.
	// The inbox runs the handlers later.
	Inbox Inbox
	// OnResult, when set, is called once for every request the middleware
	// handles (not for those of other paths), after its answer was written
	// and its handlers, if any, returned: for a 202 of the timeout, when they
	// return. It runs on the goroutine that finished last and must not block
	// for long; it must not keep Result.Payload beyond the call unless it
	// copies it.
	OnResult func(Result)
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
// per delivery: about 3 µs of the 63 that a typed push costs over HTTP here.)
type Middleware struct {
	w           *Webhooks
	path        string // without trailing slashes; "" for "/"
	logger      *slog.Logger
	timeout     time.Duration
	max         int64
	maxInFlight int64 // 0: no bound
	inFlight    atomic.Int64
	workers     workers // run each accepted delivery's handlers
	inbox       Inbox
	onResult    func(Result)
}

// NewMiddleware returns a Middleware serving w. It panics when w is nil.
func NewMiddleware(w *Webhooks, opts MiddlewareOptions) *Middleware {
	if w == nil {
		panic("webhooks: NewMiddleware with a nil *Webhooks")
	}
	m := &Middleware{w: w, logger: opts.Logger, timeout: opts.Timeout, max: opts.MaxBodyBytes, workers: newWorkers(), inbox: opts.Inbox, onResult: opts.OnResult}
	path := opts.Path
	if path == "" {
		path = DefaultPath
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	m.path = strings.TrimRight(path, "/")
	if m.logger == nil {
		m.logger = w.Logger()
	}
	if m.timeout == 0 {
		m.timeout = DefaultTimeout
	}
	if m.max <= 0 {
		m.max = DefaultMaxBodyBytes
	}
	switch {
	case opts.MaxInFlight == 0:
		m.maxInFlight = DefaultMaxInFlight
	case opts.MaxInFlight > 0:
		m.maxInFlight = int64(opts.MaxInFlight)
	}
	return m
}

// InFlight reports how many deliveries this Middleware has dispatched whose
// handlers have not all returned yet: the number MaxInFlight bounds.
func (m *Middleware) InFlight() int { return int(m.inFlight.Load()) }

// acquire takes a place for a delivery among MaxInFlight, or reports false
// when none is free.
func (m *Middleware) acquire() bool {
	for {
		n := m.inFlight.Load()
		if m.maxInFlight > 0 && n >= m.maxInFlight {
			return false
		}
		if m.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// ServeHTTP handles a request for the middleware's path and answers any other
// with 404 and a JSON error, so that the Middleware can be a server's handler.
func (m *Middleware) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !m.Handle(rw, r) {
		m.notFound(rw, r)
	}
}

// Handle handles r when it is for the middleware's path, and reports whether it
// was. When it returns false it has written nothing, so the caller may answer.
func (m *Middleware) Handle(rw http.ResponseWriter, r *http.Request) bool {
	if !m.matches(r.URL) {
		return false
	}
	if m.onResult == nil {
		m.serve(rw, r, nil)
		return true
	}
	oc := &outcome{m: m, start: time.Now()}
	oc.res.Header = r.Header
	oc.res.ID = r.Header.Get(HeaderDelivery)
	oc.res.Event = r.Header.Get(HeaderEvent)
	oc.res.ReceivedAt = oc.start
	oc.left.Store(1)
	m.serve(&statusWriter{ResponseWriter: rw, oc: oc}, r, oc)
	oc.done()
	return true
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

// matches reports whether u is for the middleware's path. The path is compared
// decoded (so /api/forge/web%68ooks matches) and byte for byte after trailing
// slashes are dropped; the query does not count. It is not cleaned: "..", "."
// and doubled slashes do not match. An encoded slash (%2F) never matches,
// because decoded it would turn one segment into two.
func (m *Middleware) matches(u *url.URL) bool {
	if u == nil {
		return false
	}
	if u.RawPath != "" && strings.Contains(strings.ToLower(u.RawPath), "%2f") {
		return false
	}
	return strings.TrimRight(u.Path, "/") == m.path
}

// Messages of the answers; the README's status table quotes them.
const (
	msgUnsupportedType = `Unsupported "Content-Type" header value. Must be "application/json"`
	msgMismatch        = "signature does not match event payload and secret"
	msgShuttingDown    = "Shutting down: not accepting deliveries"
	msgBusy            = "Too many deliveries in progress: try again later"
)

var requiredHeaders = [...]string{HeaderEvent, HeaderSignature, HeaderDelivery}

func (m *Middleware) serve(rw http.ResponseWriter, r *http.Request, oc *outcome) {
	var start time.Time
	if oc != nil {
		start = oc.start
	} else {
		start = time.Now()
	}
	if r.Method != http.MethodPost {
		m.reject(rw, r, http.StatusNotFound, "Unknown route: "+r.Method+" "+requestURI(r), slog.LevelInfo, "method is not POST")
		return
	}
	if cts := r.Header.Values("Content-Type"); len(cts) != 1 || !isJSON(cts[0]) {
		m.reject(rw, r, http.StatusUnsupportedMediaType, msgUnsupportedType, slog.LevelWarn, "content type is not application/json", "content_type", strings.Join(cts, ", "))
		return
	}
	var missing, repeated []string
	for _, h := range requiredHeaders {
		switch vs := r.Header.Values(h); {
		case len(vs) == 0 || len(vs) == 1 && strings.TrimSpace(vs[0]) == "":
			missing = append(missing, strings.ToLower(h))
		case len(vs) > 1:
			repeated = append(repeated, strings.ToLower(h))
		}
	}
	if missing != nil {
		m.reject(rw, r, http.StatusBadRequest, "Required headers missing: "+strings.Join(missing, ", "), slog.LevelWarn, "required headers missing")
		return
	}
	if repeated != nil {
		m.reject(rw, r, http.StatusBadRequest, "Headers sent more than once, ambiguous: "+strings.Join(repeated, ", "), slog.LevelWarn, "required headers repeated")
		return
	}
	d := Delivery{
		ID:         strings.TrimSpace(r.Header.Get(HeaderDelivery)),
		Name:       strings.TrimSpace(r.Header.Get(HeaderEvent)),
		Signature:  strings.TrimSpace(r.Header.Get(HeaderSignature)),
		Header:     r.Header,
		ReceivedAt: start,
	}
	if r.ContentLength > m.max {
		m.tooLarge(rw, r, d)
		return
	}

	// Read the body once, hashing it with the primary secret on the way in; the
	// additional secrets are tried on the same bytes only if that fails.
	digest := m.w.digest()
	defer m.w.release(digest)
	body, err := readBody(r.Body, r.ContentLength, m.max, digest)
	var maxErr *http.MaxBytesError
	switch {
	case errors.Is(err, errTooLarge) || errors.As(err, &maxErr):
		m.tooLarge(rw, r, d)
		return
	case err != nil:
		m.reject(rw, r, http.StatusBadRequest, "Could not read the request body", slog.LevelWarn, "body read failed", "delivery", d.ID, "error", err)
		return
	}
	d.Payload = body
	if !m.w.verifyDigest(digest, body, d.Signature) {
		m.w.mismatch(context.WithoutCancel(r.Context()), d, nil)
		m.reject(rw, r, http.StatusBadRequest, msgMismatch, slog.LevelWarn, "signature mismatch", "delivery", d.ID, "event", d.Name)
		return
	}
	if oc != nil {
		oc.res.Verified, oc.res.Payload = true, body
	}
	if m.inbox != nil {
		m.enqueue(rw, r, d)
		return
	}

	// The delivery is counted for Close before any answer can acknowledge it,
	// so that a 202 is never sent for handlers a shutdown would not wait for.
	if !m.w.accepted.add() {
		m.unavailable(rw, r, msgShuttingDown, "closed", "delivery", d.ID)
		return
	}
	// A place among MaxInFlight is taken only now, after the body was read and
	// verified: a slow or forged request never holds one.
	if !m.acquire() {
		m.w.accepted.done()
		m.unavailable(rw, r, msgBusy, "too many deliveries in flight", "delivery", d.ID, "event", d.Name, "in_flight", m.InFlight(), "max_in_flight", m.maxInFlight)
		return
	}

	// The handlers outlive the request when they take longer than the timeout,
	// so they must not see its cancellation; Close waits for them.
	ctx := ContextWithDelivery(context.WithoutCancel(r.Context()), DeliveryInfo{ID: d.ID, Event: d.Name, Header: r.Header, ReceivedAt: start, Attempt: 1})
	if oc != nil {
		oc.left.Add(1) // the handlers' end, as well as the answer
	}
	if m.timeout < 0 || r.ProtoMajor == 1 && canFlush(rw) {
		m.receiveInline(ctx, rw, r, d, oc)
		return
	}
	m.receiveHandedOff(ctx, rw, r, d, oc)
}

// receive runs the handlers of an accepted delivery, then gives back its place
// among MaxInFlight (before the answer, so that it sees the place free) and
// tells Close it is done.
func (m *Middleware) receive(ctx context.Context, d Delivery, oc *outcome) error {
	err := m.w.Receive(ctx, emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload})
	m.inFlight.Add(-1)
	m.w.accepted.done()
	if oc != nil {
		oc.err = err
		oc.done()
	}
	if errors.Is(err, emitter.ErrClosed) {
		// Only when Close gave up waiting (its context ended) before this
		// delivery's handlers started, or the Emitter was closed directly.
		m.logger.Error("webhooks: delivery dropped: closed before its handlers ran", "delivery", d.ID, "event", d.Name)
	}
	return err
}

// receiveInline runs the handlers on the request's goroutine. When they take
// longer than the timeout, a timer answers 202 from its own goroutine, with
// Connection: close so that the client does not send its next request on a
// connection whose handler has not returned, and flushes it to the client.
func (m *Middleware) receiveInline(ctx context.Context, rw http.ResponseWriter, r *http.Request, d Delivery, oc *outcome) {
	var late *lateAnswer
	if m.timeout > 0 {
		late = m.startLate(rw, r, d)
	}
	err := m.receive(ctx, d, oc)
	if late != nil && !late.finish() {
		return // answered 202 already
	}
	if r.Context().Err() != nil {
		m.logger.Info("webhooks: client went away before the answer; handlers ran to the end", "delivery", d.ID, "event", d.Name)
	}
	m.answer(rw, r, d, err)
}

// lateAnswer is the 202 that receiveInline's timer writes when the handlers
// outlast the timeout, and the lock that makes it and the handlers' own answer
// exclusive: whichever comes first answers.
type lateAnswer struct {
	m     *Middleware
	rw    http.ResponseWriter
	r     *http.Request
	d     Delivery
	timer *time.Timer
	mu    sync.Mutex
	done  bool // an answer was written, or the handlers returned first
}

// lateAnswers holds lateAnswer values, each with its timer, whose timer never
// ran: a delivery answered in time gives its own back, so that the common case
// allocates neither.
var lateAnswers sync.Pool

// startLate arms the 202 of rw's delivery d, to be written after m.timeout
// unless finish comes first.
func (m *Middleware) startLate(rw http.ResponseWriter, r *http.Request, d Delivery) *lateAnswer {
	a, _ := lateAnswers.Get().(*lateAnswer)
	if a == nil {
		a = new(lateAnswer)
	}
	a.m, a.rw, a.r, a.d, a.done = m, rw, r, d, false
	if a.timer == nil {
		a.timer = time.AfterFunc(m.timeout, a.answer)
	} else {
		a.timer.Reset(m.timeout)
	}
	return a
}

// answer writes the 202, unless the handlers have returned.
func (a *lateAnswer) answer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	a.done = true
	// This runs on the timer's goroutine, where net/http does not recover a
	// panic as it does on the request's: a writer that panics (say, a wrapper
	// whose Flush asserts a Flusher it wraps) must cost this answer, not the
	// process.
	defer func() {
		if v := recover(); v != nil {
			a.m.logger.Error("webhooks: writing the 202 panicked", "delivery", a.d.ID, "event", a.d.Name, "panic", fmt.Sprint(v))
		}
	}()
	a.m.stillProcessing(a.r, a.d)
	a.rw.Header().Set("Connection", "close")
	writeText(a.rw, http.StatusAccepted, "still processing\n")
	http.NewResponseController(a.rw).Flush()
}

// finish stops the timer and reports whether the handlers' answer is still to
// be written; when the timer is answering, it waits until the 202 is written.
func (a *lateAnswer) finish() bool {
	if a.timer.Stop() {
		// The timer never ran, and now never will: nothing else holds a,
		// and the handlers' answer is to be written.
		a.m, a.rw, a.r, a.d = nil, nil, nil, Delivery{}
		lateAnswers.Put(a)
		return true
	}
	// The timer has started answer, which may not hold the lock yet: a stays
	// out of the pool, since that call may still read it.
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return false
	}
	a.done = true
	return true
}

// canFlush reports whether rw, or a writer it wraps, can flush: the 202 of a
// timeout written by another goroutine reaches the client only if it can.
func canFlush(rw http.ResponseWriter) bool {
	for {
		switch w := rw.(type) {
		case http.Flusher, interface{ FlushError() error }:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			rw = w.Unwrap()
		default:
			return false
		}
	}
}

// receiveHandedOff runs the handlers on another goroutine while this one
// waits for them, for the timeout, and for the client to go away.
func (m *Middleware) receiveHandedOff(ctx context.Context, rw http.ResponseWriter, r *http.Request, d Delivery, oc *outcome) {
	done := make(chan error, 1)
	m.workers.run(func() { done <- m.receive(ctx, d, oc) })
	var timeout <-chan time.Time
	if m.timeout > 0 {
		t := time.NewTimer(m.timeout)
		defer t.Stop()
		timeout = t.C
	}
	// net/http cancels the request's context when it reads the end of the
	// connection, which a client that only half-closed it also causes. So the
	// answer does not depend on it: it is written when the handlers are done or
	// the timeout passes, whether or not anyone still reads it. (Answering at
	// once would race with a result already there, and leave net/http to send
	// an empty 200.) The wait is bounded by Timeout, as for any request.
	gone := r.Context().Done()
	for {
		select {
		case err := <-done:
			m.answer(rw, r, d, err)
			return
		case <-timeout:
			m.stillProcessing(r, d)
			writeText(rw, http.StatusAccepted, "still processing\n")
			return
		case <-gone:
			m.logger.Info("webhooks: client went away; handlers go on", "delivery", d.ID, "event", d.Name)
			gone = nil
		}
	}
}

// stillProcessing logs the 202 answered when the handlers outlast the
// timeout: a warning once half the places are taken by running handlers, so
// that hanging handlers show in the default log before deliveries are refused.
func (m *Middleware) stillProcessing(r *http.Request, d Delivery) {
	level, n := slog.LevelInfo, int64(m.InFlight())
	if m.maxInFlight > 0 && 2*n >= m.maxInFlight {
		level = slog.LevelWarn
	}
	m.logger.Log(r.Context(), level, "webhooks: handlers still running; answered 202", "delivery", d.ID, "event", d.Name, "timeout", m.timeout, "in_flight", n, "max_in_flight", m.maxInFlight)
}

// answer writes the response for Receive's result.
func (m *Middleware) answer(rw http.ResponseWriter, r *http.Request, d Delivery, err error) {
	var herr *emitter.Error
	switch {
	case err == nil:
		writeText(rw, http.StatusOK, "ok\n")
	case errors.Is(err, emitter.ErrClosed):
		m.unavailable(rw, r, msgShuttingDown, "closed", "delivery", d.ID)
	case errors.As(err, &herr) && len(herr.Errors) > 0:
		first := herr.Errors[0]
		code := statusOf(first)
		m.logger.Error("webhooks: handlers failed", "delivery", d.ID, "event", d.Name, "status", code, "errors", len(herr.Errors), "error", err)
		writeJSONError(rw, code, first.Error())
	case errors.Is(err, emitter.ErrInvalidPayload), errors.Is(err, emitter.ErrMissingPayload), errors.Is(err, emitter.ErrMissingName):
		m.reject(rw, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "emitter: "), slog.LevelWarn, "invalid payload", "delivery", d.ID, "event", d.Name)
	default:
		m.logger.Error("webhooks: delivery failed", "delivery", d.ID, "event", d.Name, "error", err)
		writeJSONError(rw, http.StatusInternalServerError, err.Error())
	}
}

// statusOf is the HTTP status for a handler's error: the HTTPStatus() of the
// first error in its chain that has one, when that is a 4xx or 5xx code, and
// 500 otherwise.
func statusOf(err error) int {
	var s interface{ HTTPStatus() int }
	if errors.As(err, &s) {
		if code := s.HTTPStatus(); code >= 400 && code <= 599 {
			return code
		}
	}
	return http.StatusInternalServerError
}

// WithStatus returns err with an HTTP status: when a handler's error (the first
// one, if several handlers fail) is or wraps it, the middleware answers with
// code instead of 500. code must be a 4xx or 5xx status; others are ignored. The
// result's message is err's, and errors.Is and errors.As see err through it.
// WithStatus(code, nil) is nil.
//
// Any error type with a method HTTPStatus() int works the same way.
func WithStatus(code int, err error) error {
	if err == nil {
		return nil
	}
	return &statusError{code: code, err: err}
}

type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string   { return e.err.Error() }
func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) HTTPStatus() int { return e.code }

// verifyDigest checks the signature with the digest of the primary secret, then
// with each additional secret over body.
func (w *Webhooks) verifyDigest(primary *signing.Digest, body []byte, signature string) bool {
	want, ok := signing.ParseSignature(signature)
	if !ok {
		return false
	}
	if primary.MatchDigest(want) {
		return true
	}
	for _, s := range w.additional {
		d, _ := signing.NewDigest(s)
		d.Write(body)
		if d.MatchDigest(want) {
			return true
		}
	}
	return false
}

var errTooLarge = errors.New("webhooks: body too large")

// initialBodyBuffer is the most readBody allocates before any byte of the body
// has arrived, whatever Content-Length announces.
const initialBodyBuffer = 64 << 10

// probeSize is the size of the read that checks, once a body has reached its
// announced length, that it ends there.
const probeSize = 512

// readBody reads r into one buffer, writing each piece to h as it arrives, and
// stops at max+1 bytes with errTooLarge.
//
// A request cannot make the server hold memory for bytes it has not sent, and
// a body is copied at most once:
//
//   - Bytes are read into a list of pieces, never copied while reading. The
//     first piece is contentLength+1 bytes (when known) but at most
//     initialBodyBuffer, so a body that fits it is never copied, and the read
//     that finds its end needs no piece of its own.
//   - With a Content-Length, each next piece is as large as all before it,
//     up to half the announced length; then one buffer of that length (and
//     one byte, as above) takes the pieces and the rest is read straight into
//     it. Memory held is
//     at most twice what has arrived, and 1.5 times the body at the peak.
//   - Without one (chunked), each next piece is half as large as all before
//     it, and the pieces are joined once at the end: at most 2.5 times the
//     body in all, never the 3 to 5 times of growing one buffer by doubling
//     (io.ReadAll).
func readBody(r io.Reader, contentLength, max int64, h io.Writer) ([]byte, error) {
	limit := max + 1
	first := min(limit, initialBodyBuffer)
	if contentLength >= 0 {
		// One byte more than announced, so that the read which finds the
		// end has room without a probe piece of its own.
		first = min(first, contentLength+1)
	}
	var (
		pieces [][]byte // full pieces, in order
		held   int64    // bytes in pieces
		cur    = make([]byte, 0, first)
	)
	for {
		if len(cur) == cap(cur) {
			n := held + int64(len(cur))
			if n > max {
				return nil, errTooLarge
			}
			switch half := (contentLength + 1) / 2; {
			case n == contentLength:
				// At the announced length: a small piece tells whether the
				// body ends there.
				pieces, held = append(pieces, cur), n
				cur = make([]byte, 0, min(probeSize, limit-n))
			case contentLength > n && n >= half:
				// Half of the announced body has arrived: one buffer of its
				// length for the whole, the rest read straight into it.
				whole := make([]byte, 0, min(contentLength+1, limit))
				for _, p := range pieces {
					whole = append(whole, p...)
				}
				cur = append(whole, cur...)
				pieces, held = nil, 0
			case contentLength > n:
				// Toward half of the announced length, doubling.
				next := min(max64(n, initialBodyBuffer), half-n)
				pieces, held = append(pieces, cur), n
				cur = make([]byte, 0, min(next, limit-n))
			default:
				// No length to trust: growing by half of what has arrived
				// leaves at most that much unused when the body ends.
				next := max64(n/2, initialBodyBuffer)
				pieces, held = append(pieces, cur), n
				cur = make([]byte, 0, min(next, limit-n))
			}
		}
		k, err := r.Read(cur[len(cur):cap(cur)])
		h.Write(cur[len(cur) : len(cur)+k])
		cur = cur[:len(cur)+k]
		if err == io.EOF {
			if held+int64(len(cur)) > max {
				return nil, errTooLarge
			}
			if pieces == nil {
				return cur, nil // the common case: one piece, nothing to join
			}
			return join(append(pieces, cur), held+int64(len(cur))), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// join returns the pieces as one slice: the only non-empty piece itself, or a
// copy of them all, n bytes.
func join(pieces [][]byte, n int64) []byte {
	var only []byte
	count := 0
	for _, p := range pieces {
		if len(p) > 0 {
			only = p
			count++
		}
	}
	if count <= 1 {
		if only == nil {
			return pieces[0][:0]
		}
		return only
	}
	out := make([]byte, 0, n)
	for _, p := range pieces {
		out = append(out, p...)
	}
	return out
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (m *Middleware) tooLarge(rw http.ResponseWriter, r *http.Request, d Delivery) {
	m.reject(rw, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("Payload too large: the limit is %d bytes", m.max), slog.LevelWarn, "body too large", "delivery", d.ID, "content_length", r.ContentLength)
}

// unavailable answers 503 with Retry-After: the delivery was not dispatched,
// and may be sent again later.
func (m *Middleware) unavailable(rw http.ResponseWriter, r *http.Request, msg, why string, attrs ...any) {
	rw.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	m.reject(rw, r, http.StatusServiceUnavailable, msg, slog.LevelWarn, why, attrs...)
}

func (m *Middleware) notFound(rw http.ResponseWriter, r *http.Request) {
	m.reject(rw, r, http.StatusNotFound, "Unknown route: "+r.Method+" "+requestURI(r), slog.LevelInfo, "not the webhook path")
}

// reject logs why a request is refused and answers it with a JSON error.
func (m *Middleware) reject(rw http.ResponseWriter, r *http.Request, code int, msg string, level slog.Level, why string, attrs ...any) {
	if sw, ok := rw.(*statusWriter); ok && sw.oc.reason == "" {
		sw.oc.reason = msg
	}
	attrs = append([]any{"status", code, "method", r.Method, "path", requestURI(r), "remote", r.RemoteAddr}, attrs...)
	m.logger.Log(r.Context(), level, "webhooks: rejected request: "+why, attrs...)
	writeJSONError(rw, code, msg)
}

func requestURI(r *http.Request) string {
	if r.RequestURI != "" {
		return r.RequestURI
	}
	if r.URL != nil {
		return r.URL.RequestURI()
	}
	return ""
}

// isJSON reports whether a Content-Type value is application/json, in any case,
// with or without parameters.
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true // what the forge sends; ParseMediaType allocates a map
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json" // ParseMediaType lower-cases it
}

func writeJSONError(rw http.ResponseWriter, code int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(code)
	rw.Write(body)
}

func writeText(rw http.ResponseWriter, code int, text string) {
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Content-Length", strconv.Itoa(len(text)))
	rw.WriteHeader(code)
	io.WriteString(rw, text)
}
