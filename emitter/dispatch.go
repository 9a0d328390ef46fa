package emitter

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/internal/vouched"
)

// Receive dispatches e to the handlers registered for "name.action" (when the
// payload has a top-level string "action"), for "name", and for every event
// (OnAny). They all run concurrently; Receive waits for all of them and returns
// nil, or an *Error holding each failed handler's error in that order
// ("name.action" handlers first, then "name", then OnAny, each in registration
// order). A panicking handler fails with a *PanicError. Error handlers are told
// of an *Error without delaying Receive, unless ctx comes from
// WaitForErrorHandlers.
//
// Receive checks e before any handler runs: a missing name (ErrMissingName), a
// missing payload (ErrMissingPayload) and a payload that is not a JSON object (an
// error wrapping ErrInvalidPayload) are returned as they are, and not reported to
// error handlers. After Close, Receive returns ErrClosed.
//
// The handlers get ctx as it is; Receive does not cancel it.
func (em *Emitter) Receive(ctx context.Context, e Event) error {
	return em.receive(ctx, e, false)
}

// ReceiveOwned is Receive for a payload that its caller hands over for good:
// nothing modifies or reuses e.Payload's bytes, not after the call either,
// for as long as any value made from them lives (a buffer read for this
// delivery alone; the webhooks middleware receives every body it reads this
// way). Handlers must not modify it either (see Event.Payload). Typed payloads
// decoded from it then share its bytes (Event.PayloadOwned) where Receive's
// copy them once: a typed delivery of up to 256 KiB costs an allocation of
// its size less.
func (em *Emitter) ReceiveOwned(ctx context.Context, e Event) error {
	return em.receive(ctx, e, true)
}

// receive is Receive, with owned the caller's word on e.Payload.
func (em *Emitter) receive(ctx context.Context, e Event, owned bool) error {
	e.owned = owned // an Event a handler passes on says owned: only the caller's word counts
	if e.Name == "" {
		return ErrMissingName
	}
	if len(e.Payload) == 0 {
		return ErrMissingPayload
	}
	s := em.snap.Load()
	var plain []*Listener // the handlers of the name alone
	if s != nil {
		plain = s.byName[e.Name]
	}
	// A Decoder registered for this name validates by decoding; the delivery
	// is scanned only when there is none or it does not vouch for the payload.
	var pre *Decoder
	if em.opts.Transform == nil {
		for _, l := range plain {
			if l.dec != nil {
				pre = l.dec
				break
			}
		}
	}
	var (
		decodedValue any
		action       string // the action, when known without a scan
		decoded      bool
		known        bool
	)
	if pre != nil {
		decodedValue, action, decoded = predecode(pre, e.Payload, owned)
		known = decoded
	}
	if !known {
		// The inbox vouches for a stored delivery that its intake
		// validated and its seal proves unchanged: no second scan.
		action, known = vouched.Action(ctx, e.Payload)
	}
	if known {
		e.scanned = e.Payload
	} else {
		res, err := jsonscan.Scan(e.Payload)
		if err != nil {
			return jsonscan.InvalidPayload(ErrInvalidPayload, e.Name, e.ID, err)
		}
		e.scanned, e.scan = e.Payload, res
	}
	e.memo = nil // a fresh one per delivery, below
	if !em.begin() {
		return ErrClosed
	}
	defer em.end()

	if s == nil {
		return nil
	}
	var withAction []*Listener
	if len(s.byName) > 0 {
		var buf [64]byte // "name.action" without allocating, for most names
		key := append(append(buf[:0], e.Name...), '.')
		if known {
			key = append(key, action...)
		} else if e.scan.Found() {
			key = append(key, e.scan.Bytes(e.Payload)...)
		}
		if len(key) > len(e.Name)+1 {
			withAction = s.byName[string(key)]
		}
	}
	nOn := len(withAction) + len(plain)
	n := nOn + len(s.any)
	if n == 0 {
		return nil
	}

	d := &delivery{ctx: ctx}
	e.memo = &d.memo
	if decoded {
		d.memo.set(pre.Key, decodedValue)
	}
	if known {
		d.memo.known, d.memo.action = true, action
	}
	if n <= len(d.errBuf) {
		d.errs = d.errBuf[:n]
	} else {
		d.errs = make([]error, n)
	}

	if em.opts.Transform != nil && nOn > 0 {
		// OnAny handlers do not wait for the transform; On handlers do.
		for i, l := range s.any {
			d.start(nOn+i, l, e, false)
		}
		onEvent, terr := em.transform(ctx, e)
		if terr != nil {
			for i := range nOn {
				d.errs[i] = terr
			}
			return em.finish(ctx, d, e)
		}
		onEvent.memo = new(memo) // its own: the payload may differ
		onEvent.owned = false    // and its bytes may be anyone's
		i := 0
		for _, list := range [2][]*Listener{withAction, plain} {
			for _, l := range list {
				d.start(i, l, onEvent, i == nOn-1)
				i++
			}
		}
		return em.finish(ctx, d, e)
	}

	i := 0
	for _, list := range [3][]*Listener{withAction, plain, s.any} {
		for _, l := range list {
			d.start(i, l, e, i == n-1) // the last one on this goroutine
			i++
		}
	}
	return em.finish(ctx, d, e)
}

// delivery is the state one Receive shares with its handlers, allocated once.
type delivery struct {
	ctx    context.Context
	wg     sync.WaitGroup
	memo   memo // for the Event as delivered
	errs   []error
	errBuf [4]error
}

// start runs handler l as slot i: on this goroutine when inline, otherwise in a
// new one counted by d.wg.
func (d *delivery) start(i int, l *Listener, e Event, inline bool) {
	if inline {
		call(d.ctx, &d.errs[i], l.h, e)
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		call(d.ctx, &d.errs[i], l.h, e)
	}()
}

// finish waits for the handlers and reports their errors.
func (em *Emitter) finish(ctx context.Context, d *delivery, e Event) error {
	d.wg.Wait()
	var errs []error
	for _, err := range d.errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if errs == nil {
		return nil
	}
	herr := &Error{Event: e, Errors: errs}
	em.ReportError(ctx, herr)
	return herr
}

func (em *Emitter) transform(ctx context.Context, e Event) (out Event, err error) {
	returned := false
	defer func() {
		if !returned {
			err = recovered(recover(), "transform")
		}
		if err != nil {
			err = fmt.Errorf("emitter: transform: %w", err)
		}
	}()
	out, err = em.opts.Transform(ctx, e)
	returned = true
	return out, err
}

// call runs a handler and stores its error in *slot, turning a panic (or a
// runtime.Goexit, which never returns) into a *PanicError.
func call(ctx context.Context, slot *error, h Handler, e Event) {
	returned := false
	defer func() {
		if !returned {
			*slot = recovered(recover(), "handler")
		}
	}()
	*slot = h(ctx, e)
	returned = true
}

// recovered builds the error of a function that did not return: it panicked
// with v, or (v == nil) it called runtime.Goexit.
func recovered(v any, what string) error {
	if v == nil {
		return &PanicError{Value: "runtime.Goexit called", Stack: debug.Stack(), what: what}
	}
	return &PanicError{Value: v, Stack: debug.Stack(), what: what}
}

// ReportError tells every error handler about err, each on its own goroutine,
// and returns at once (under a context from WaitForErrorHandlers: once they
// have returned). Receive calls it for failed handlers; package webhooks
// calls it when a delivery's signature does not match, so that error handlers
// hear of deliveries that never reached Receive. The handlers get ctx without
// its cancellation, since they outlive the call. After Close, or past
// Options.MaxErrorReports or MaxErrorReportBytes, no handler runs and err is
// logged instead.
func (em *Emitter) ReportError(ctx context.Context, err *Error) {
	if err == nil {
		return
	}
	s := em.snap.Load()
	if s == nil || len(s.errs) == 0 {
		return
	}
	if !em.begin() {
		em.Logger().Warn("emitter: closed; error not reported to error handlers", "event", clip.String(err.Event.Name), "delivery", clip.String(err.Event.ID), "error", clip.String(err.Error()))
		return
	}
	defer em.end()
	size := int64(len(err.Event.Payload))
	if !em.takeReport(size) {
		em.Logger().Error("emitter: too many error reports running; error logged instead of reported", "event", clip.String(err.Event.Name), "delivery", clip.String(err.Event.ID), "error", clip.String(err.Error()), "payload_bytes", size)
		return
	}
	var wait *sync.WaitGroup
	if ctx.Value(waitReportsKey{}) != nil {
		wait = new(sync.WaitGroup)
		wait.Add(len(s.errs))
	}
	ctx = context.WithoutCancel(ctx)
	left := new(atomic.Int32)
	left.Store(int32(len(s.errs)))
	for _, l := range s.errs {
		em.active.Add(1) // while begin's count holds, so Close cannot miss it
		go func() {
			if wait != nil {
				defer wait.Done()
			}
			defer em.end() // last, so that Close sees the report ended
			defer func() {
				if left.Add(-1) == 0 {
					em.endReport(size)
				}
			}()
			em.runErrorHandler(ctx, l.eh, err)
		}()
	}
	if wait != nil {
		wait.Wait()
	}
}

// takeReport counts a report of size payload bytes, or reports false past
// Options.MaxErrorReports or MaxErrorReportBytes.
func (em *Emitter) takeReport(size int64) bool {
	maxN, maxBytes := int64(em.opts.MaxErrorReports), em.opts.MaxErrorReportBytes
	if maxN == 0 {
		maxN = DefaultMaxErrorReports
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxErrorReportBytes
	}
	em.reportMu.Lock()
	defer em.reportMu.Unlock()
	if maxN > 0 && em.reports >= maxN || maxBytes > 0 && em.reports > 0 && em.reportBytes+size > maxBytes {
		return false
	}
	em.reports++
	em.reportBytes += size
	return true
}

func (em *Emitter) endReport(size int64) {
	em.reportMu.Lock()
	defer em.reportMu.Unlock()
	em.reports--
	em.reportBytes -= size
}

func (em *Emitter) runErrorHandler(ctx context.Context, h ErrorHandler, err *Error) {
	returned := false
	defer func() {
		if !returned {
			p := recovered(recover(), "error handler").(*PanicError)
			em.Logger().Error("emitter: error handler panicked", "panic", clip.String(fmt.Sprint(p.Value)), "event", clip.String(err.Event.Name), "delivery", clip.String(err.Event.ID), "stack", string(p.Stack))
		}
	}()
	h(ctx, err)
	returned = true
}

// predecode runs dec on payload; a panic in it counts as not decoded, so that
// the delivery takes the usual way.
func predecode(dec *Decoder, payload []byte, owned bool) (v any, action string, ok bool) {
	defer func() {
		if recover() != nil {
			v, action, ok = nil, "", false
		}
	}()
	return dec.Decode(payload, owned)
}
