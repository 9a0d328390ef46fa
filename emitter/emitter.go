package emitter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"forgehooks.dev/forgehooks/payloads/names"
)

var (
	// ErrMissingName is returned by Receive for an event without a name.
	ErrMissingName = errors.New("emitter: event name is required")
	// ErrMissingPayload is returned by Receive for an event without a payload.
	ErrMissingPayload = errors.New("emitter: event payload is required")
	// ErrInvalidPayload is wrapped by Receive's error for a payload that is not a
	// JSON object (invalid JSON, or an array, a string, a number, true, false or
	// null).
	ErrInvalidPayload = errors.New("emitter: payload is not a JSON object")
	// ErrClosed is returned by Receive once Close has been called.
	ErrClosed = errors.New("emitter: closed")
)

// Options configures an Emitter. The zero value is valid.
type Options struct {
	// Transform, when set, turns each delivery into the Event that handlers
	// registered with On (and OnNames) receive. It runs once per delivery, and only
	// when at least one such handler matches; OnAny handlers get the delivery as
	// it is. Its error (or panic) becomes the error of every On handler it would
	// have fed.
	Transform func(ctx context.Context, e Event) (Event, error)
	// Logger receives warnings (unknown event names) and errors (a panicking error
	// handler). Nil: slog.Default(), warnings and errors only (an Emitter has
	// nothing to say at lower levels unless asked).
	Logger *slog.Logger
	// KnownEvent tells whether an event name (such as "issues" or
	// "issues.opened") is known. Registering a name for which it returns false
	// logs a warning, most likely a typo; the handler is registered all the
	// same (the forge adds events before any schema has them). Nil: the names
	// of this module's schema (names.IsKnown, which compiles no typed payload).
	// A program with a schema of its own passes its generated package's
	// IsKnownEventName; func(string) bool { return true } turns the check off.
	KnownEvent func(name string) bool
	// Variant names the forge's server variant the handlers serve (one of
	// names.Variants, such as "ghes-3.14"). Registering a name that the schema
	// records the variant never sends (names.SentBy) logs a warning: that
	// handler would never run. A Variant the schema does not know is refused
	// by New, as by webhooks.New. Empty: no variant check.
	Variant string
	// MaxErrorReports bounds the failed deliveries whose error handlers are
	// running at once, and MaxErrorReportBytes the payload bytes they hold.
	// Past either bound, a failed delivery's error is logged (with its
	// delivery id and event, without its payload) instead of being handed to
	// the error handlers, so that slow error handlers cannot hold the
	// payloads of a flood of forged deliveries. A delivery larger than
	// MaxErrorReportBytes on its own is still reported when no other report
	// runs. Zero: DefaultMaxErrorReports and DefaultMaxErrorReportBytes.
	// Negative: no bound.
	MaxErrorReports     int
	MaxErrorReportBytes int64
}

// Defaults of Options.MaxErrorReports and MaxErrorReportBytes: far more than
// error handlers that return need, little enough that error handlers that
// hang hold a bounded number of payloads and bytes.
const (
	DefaultMaxErrorReports     = 64
	DefaultMaxErrorReportBytes = 32 << 20
)

// Emitter dispatches events to handlers. Its zero value is ready to use, with
// the default Options. An Emitter is safe for concurrent use: handlers may be
// registered and removed while deliveries are dispatched, and a delivery sees
// the handlers registered when it started.
type Emitter struct {
	opts Options

	mu   sync.Mutex // serialises registration; dispatch never takes it
	snap atomic.Pointer[snapshot]

	// active counts Receives, error reports and error handlers in flight, so that
	// Close can wait for them.
	active    atomic.Int64
	closing   atomic.Bool
	idleOnce  sync.Once
	idle      chan struct{}
	closeIdle sync.Once

	// reports counts the failed deliveries whose error handlers run, and
	// reportBytes their payload bytes, for MaxErrorReports and
	// MaxErrorReportBytes.
	reportMu    sync.Mutex
	reports     int64
	reportBytes int64
}

// New returns an Emitter configured by opts. It panics when opts.Variant is
// not empty and names.KnownVariant does not know it: an unknown variant means
// the same here as in webhooks.New, a mistake that nothing is built with
// (every registration would go unchecked), but New has no error to return it
// with, its only other input being options whose zero value is valid; so it
// is refused as registration mistakes are, with a panic that names the known
// variants. A program that reads the variant from its configuration checks
// it with names.KnownVariant first, or uses webhooks.New, which returns the
// error.
func New(opts Options) *Emitter {
	if opts.Variant != "" && !names.KnownVariant(opts.Variant) {
		panic(fmt.Sprintf("emitter: New: unknown server variant %q (the schema knows %q)", opts.Variant, names.Variants()))
	}
	return &Emitter{opts: opts}
}

// Listener is the handle of a registration, for RemoveListener.
type Listener struct {
	h   Handler
	eh  ErrorHandler
	dec *Decoder // a typed handler's, registered with OnDecoded
}

// snapshot is an immutable view of the registrations. Registration builds a new
// one (copy on write) so that dispatch reads it without a lock; slices are never
// appended to in place.
type snapshot struct {
	byName map[string][]*Listener
	any    []*Listener
	errs   []*Listener
}

// Logger returns the logger the Emitter uses: Options.Logger, or
// slog.Default() (as it is at the call) with its debug and info lines dropped.
func (em *Emitter) Logger() *slog.Logger {
	if em.opts.Logger != nil {
		return em.opts.Logger
	}
	return slog.New(warnings{slog.Default().Handler()})
}

// warnings passes on the records of level Warn and above only.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(as)}
}

func (w warnings) WithGroup(name string) slog.Handler {
	return warnings{w.Handler.WithGroup(name)}
}

// On registers h for the event name, either an event ("issues") or an event and
// action ("issues.opened"), and returns the registration's handle.
//
// It panics, as http.ServeMux does for a bad pattern, when name is empty, "*"
// (use OnAny) or "error" (use OnError), or when h is nil. A name that
// Options.KnownEvent does not know, or that Options.Variant never sends, is
// logged as a warning and registered anyway.
func (em *Emitter) On(name string, h Handler) *Listener {
	return em.OnNames([]string{name}, h)
}

// OnNames registers h under each of names, as On does for one, and returns one
// handle for all of them. It panics when names is empty or when On would.
func (em *Emitter) OnNames(names []string, h Handler) *Listener {
	return em.onNames(names, h, nil)
}

// onNames registers a listener of h and dec (nil but for OnDecoded).
func (em *Emitter) onNames(eventNames []string, h Handler, dec *Decoder) *Listener {
	if len(eventNames) == 0 {
		panic("emitter: OnNames with no event names")
	}
	for _, name := range eventNames {
		switch name {
		case "":
			panic("emitter: On with an empty event name")
		case "*":
			panic(`emitter: On("*"): use OnAny to handle every event`)
		case "error":
			panic(`emitter: On("error"): use OnError to handle errors`)
		}
	}
	if h == nil {
		panic("emitter: On with a nil handler")
	}
	l := &Listener{h: h, dec: dec}
	em.update(func(s *snapshot) {
		for _, name := range eventNames {
			s.byName[name] = append(s.byName[name][:len(s.byName[name]):len(s.byName[name])], l)
		}
	})
	known := em.opts.KnownEvent
	if known == nil {
		known = names.IsKnown
	}
	for _, name := range eventNames {
		switch {
		case !known(name):
			em.Logger().Warn("emitter: registered a handler for an unknown event name", "name", name)
		case !names.SentBy(name, em.opts.Variant):
			em.Logger().Warn("emitter: registered a handler for an event name the server variant never sends", "name", name, "variant", em.opts.Variant)
		}
	}
	return l
}

// OnDecoded registers h under name as On does, with dec, which decodes each
// delivery of name before any handler runs, in place of Receive's own
// validation (see Decoder). It is for a handler that decodes every delivery of
// name: a name with an action ("issues.opened") or an Emitter with a
// Transform gains nothing from it, so there dec is not used. With several
// such registrations for one name, the earliest still registered decodes.
// RemoveListener removes it as any other. It panics when dec.Decode is nil or
// when On would.
func (em *Emitter) OnDecoded(name string, dec Decoder, h Handler) *Listener {
	if dec.Decode == nil {
		panic("emitter: OnDecoded with a nil Decoder.Decode")
	}
	return em.onNames([]string{name}, h, &dec)
}

// OnAny registers h for every event and returns the registration's handle. It
// panics when h is nil.
func (em *Emitter) OnAny(h Handler) *Listener {
	if h == nil {
		panic("emitter: OnAny with a nil handler")
	}
	l := &Listener{h: h}
	em.update(func(s *snapshot) { s.any = append(s.any[:len(s.any):len(s.any)], l) })
	return l
}

// OnError registers h to be told of every failed delivery, and returns the
// registration's handle. Error handlers run in their own goroutines, so they do
// not delay Receive; Close waits for them. Past Options.MaxErrorReports
// deliveries (or MaxErrorReportBytes of their payloads) whose error handlers
// still run, a failure is logged instead of reported. It panics when h is nil.
func (em *Emitter) OnError(h ErrorHandler) *Listener {
	if h == nil {
		panic("emitter: OnError with a nil handler")
	}
	l := &Listener{eh: h}
	em.update(func(s *snapshot) { s.errs = append(s.errs[:len(s.errs):len(s.errs)], l) })
	return l
}

// RemoveListener removes the most recent registration of l under name: an event
// name as given to On, "*" for OnAny, or "error" for OnError. It reports whether
// there was one. Deliveries already started still run the handler.
func (em *Emitter) RemoveListener(name string, l *Listener) bool {
	return em.RemoveListenerNames([]string{name}, l) == 1
}

// RemoveListenerNames is RemoveListener for each of names in turn, as one change:
// the counterpart of OnNames (the spec's removeListener(eventNames, handler)). It
// returns how many registrations it removed.
func (em *Emitter) RemoveListenerNames(names []string, l *Listener) int {
	if l == nil {
		return 0
	}
	removed := 0
	em.update(func(s *snapshot) {
		for _, name := range names {
			if name != "" && s.remove(name, l) {
				removed++
			}
		}
	})
	return removed
}

// remove drops the most recent registration of l under name from s, which is a
// fresh copy being prepared by update.
func (s *snapshot) remove(name string, l *Listener) bool {
	var list *[]*Listener
	switch name {
	case "*":
		list = &s.any
	case "error":
		list = &s.errs
	default:
		ls := s.byName[name]
		list = &ls
		defer func() {
			if len(ls) == 0 {
				delete(s.byName, name)
			} else {
				s.byName[name] = ls
			}
		}()
	}
	for i := len(*list) - 1; i >= 0; i-- {
		if (*list)[i] == l {
			// A new slice: the old snapshot's may still be in use.
			*list = slices.Concat((*list)[:i], (*list)[i+1:])
			return true
		}
	}
	return false
}

// Handles reports whether a delivery of event with action would run a
// handler: one registered with OnAny, under event, or under
// "event.action". With Options.Transform, which may rename a delivery, it
// reports true.
func (em *Emitter) Handles(event, action string) bool {
	if em.opts.Transform != nil {
		return true
	}
	s := em.snap.Load()
	if s == nil {
		return false
	}
	if len(s.any) > 0 || len(s.byName[event]) > 0 {
		return true
	}
	return action != "" && len(s.byName[event+"."+action]) > 0
}

// Names returns the names handlers are registered under, "event" or
// "event.action" as given to On, OnNames and OnDecoded, sorted, each once;
// handlers of OnAny and OnError are under no name. The slice is the caller's.
func (em *Emitter) Names() []string {
	s := em.snap.Load()
	if s == nil {
		return []string{}
	}
	out := make([]string, 0, len(s.byName))
	for name, ls := range s.byName {
		if len(ls) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// update applies fn to a copy of the current snapshot and publishes the copy.
func (em *Emitter) update(fn func(s *snapshot)) {
	em.mu.Lock()
	defer em.mu.Unlock()
	next := &snapshot{byName: make(map[string][]*Listener)}
	if old := em.snap.Load(); old != nil {
		for k, v := range old.byName {
			next.byName[k] = v
		}
		next.any, next.errs = old.any, old.errs
	}
	fn(next)
	em.snap.Store(next)
}

// begin records an operation in flight, unless the Emitter is closing.
func (em *Emitter) begin() bool {
	em.active.Add(1)
	if em.closing.Load() {
		em.end()
		return false
	}
	return true
}

// end ends an operation that begin (or a spawn) recorded.
func (em *Emitter) end() {
	if em.active.Add(-1) == 0 && em.closing.Load() {
		em.closeIdle.Do(func() { close(em.idleChan()) })
	}
}

func (em *Emitter) idleChan() chan struct{} {
	em.idleOnce.Do(func() { em.idle = make(chan struct{}) })
	return em.idle
}

// Close stops the Emitter: Receive then returns ErrClosed. Close waits until
// every Receive in flight (including those whose handlers outlived an HTTP
// timeout) and every error handler still running has finished, or until ctx is
// done, whichever comes first; in the latter case it returns ctx's error.
func (em *Emitter) Close(ctx context.Context) error {
	em.closing.Store(true)
	if em.active.Load() == 0 {
		return nil
	}
	select {
	case <-em.idleChan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
