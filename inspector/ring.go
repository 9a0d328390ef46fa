package inspector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// Defaults of RingOptions.
const (
	DefaultMaxRecords = 1000
	DefaultMaxBytes   = 64 << 20
)

// RingOptions configures a Ring.
type RingOptions struct {
	// Webhooks runs the handlers again for Replay and Retry (with Receive:
	// the payload was verified when it arrived). Without it, both return
	// delivery.ErrUnsupported.
	Webhooks *webhooks.Webhooks
	// MaxRecords bounds how many deliveries the ring keeps; the oldest go
	// first. Zero: DefaultMaxRecords. Negative: no bound.
	MaxRecords int
	// MaxBytes bounds the bytes of payloads and headers kept. Zero:
	// DefaultMaxBytes. Negative: no bound. The newest delivery is kept even
	// when it alone is larger.
	MaxBytes int64
	// Logger gets a line for every replay. Nil: Webhooks' logger when
	// Webhooks is set, else slog.Default().
	Logger *slog.Logger
}

// Ring is a delivery.Store over the last deliveries in memory, for a receiver without
// a durable inbox: the middleware's OnResult feeds it (see Inspector.OnResult,
// or call Add). It knows no retries: a delivery whose handlers failed is
// "failed", and Retry runs such a one again like Replay. It is safe for
// concurrent use.
type Ring struct {
	opts  RingOptions
	log   *slog.Logger
	store store
}

// NewRing returns an empty Ring.
func NewRing(opts RingOptions) *Ring {
	opts.MaxRecords = bound.Value(opts.MaxRecords, DefaultMaxRecords, math.MaxInt)
	opts.MaxBytes = bound.Value(opts.MaxBytes, DefaultMaxBytes, math.MaxInt64)
	r := &Ring{opts: opts, log: opts.Logger}
	if r.log == nil && opts.Webhooks != nil {
		r.log = opts.Webhooks.Logger()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.store.init(opts.MaxRecords, opts.MaxBytes, true)
	return r
}

// Add records res when it is a verified delivery whose handlers ran (answered
// 2xx, or 500 when they failed), and reports whether it did. Rejected
// requests and duplicates are not for the Ring: Inspector.OnResult keeps them
// in its bounded ring of requests instead. Add copies what it keeps.
func (r *Ring) Add(res webhooks.Result) bool {
	if !res.Verified || res.Duplicate || res.Payload == nil ||
		res.Status >= 300 && res.Status != http.StatusInternalServerError {
		return false
	}
	rec := &delivery.Record{
		ID: res.ID, Tenant: res.Tenant, Name: res.Name, Action: res.Action,
		Header:     res.Header.Clone(),
		Payload:    append([]byte(nil), res.Payload...),
		Size:       int64(len(res.Payload)),
		ReceivedAt: res.ReceivedAt, HTTPStatus: res.Status, Verified: true,
		Status: delivery.StatusHandled,
	}
	a := delivery.Attempt{Number: 1, Start: res.ReceivedAt, Duration: res.Duration}
	if res.Err != nil {
		rec.Status = delivery.StatusFailed
		a.Err, a.Stack = errorText(res.Err)
	}
	rec.Attempts = []delivery.Attempt{a}
	var found [2]jsonscan.Result
	if jsonscan.Lookup(rec.Payload, rowPaths, found[:]) == nil {
		rec.Repository, rec.Sender = clip.String(found[0].String(rec.Payload)), clip.String(found[1].String(rec.Payload))
	}
	r.store.add(rec)
	return true
}

// Len returns how many deliveries the ring holds, and their bytes.
func (r *Ring) Len() (n int, bytes int64) { return r.store.len() }

// List implements delivery.Store: the records without their payloads.
func (r *Ring) List(_ context.Context, opts delivery.ListOptions) ([]delivery.Record, error) {
	return r.store.list(opts), nil
}

// Get implements delivery.Store; the payload is never cut.
func (r *Ring) Get(_ context.Context, id string) (delivery.Record, error) {
	rec, ok := r.store.get(id)
	if !ok {
		return delivery.Record{}, fmt.Errorf("%w: %q", delivery.ErrNotFound, id)
	}
	return rec, nil
}

// Watch implements delivery.Store.
func (r *Ring) Watch(fn func(delivery.Record)) (stop func()) { return r.store.Watch(fn) }

// Retry runs a failed delivery's handlers again, as Replay does: without an
// inbox a failed delivery is the ring's dead letter. It returns an error
// wrapping delivery.ErrNotDead for any other.
func (r *Ring) Retry(ctx context.Context, id string) error {
	rec, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	if rec.Status != delivery.StatusFailed && rec.Status != delivery.StatusDead {
		return fmt.Errorf("%w: %q is %s", delivery.ErrNotDead, id, rec.Status)
	}
	return r.Replay(ctx, id)
}

// Replay runs the handlers of delivery id again, with Webhooks.Receive and a
// webhooks.Delivery whose Attempt counts this run, and waits for them. It returns
// the handlers' error, which is also recorded as the attempt's.
func (r *Ring) Replay(ctx context.Context, id string) error {
	if r.opts.Webhooks == nil {
		return fmt.Errorf("%w: replay needs RingOptions.Webhooks", delivery.ErrUnsupported)
	}
	rec, n, ok := r.store.startAttempt(id)
	if !ok {
		return fmt.Errorf("%w: %q", delivery.ErrNotFound, id)
	}
	start := time.Now()
	ctx = webhooks.ContextWithDelivery(ctx, webhooks.Delivery{
		ID: rec.ID, Name: rec.Name, Payload: rec.Payload, Header: rec.Header, ReceivedAt: rec.ReceivedAt, Attempt: n, Tenant: rec.Tenant,
	})
	err := r.opts.Webhooks.Receive(ctx, emitter.Event{ID: rec.ID, Name: rec.Name, Payload: rec.Payload})
	d := time.Since(start)
	r.store.endAttempt(rec.Seq, n, d, err)
	if err != nil {
		r.log.Warn("inspector: replayed delivery failed", "id", rec.ID, "event", rec.Name, "attempt", n, "duration", d, "error", err)
	} else {
		r.log.Info("inspector: replayed delivery", "id", rec.ID, "event", rec.Name, "attempt", n, "duration", d)
	}
	return err
}

// errorText is an error's message and, for a handler that panicked, its stack.
func errorText(err error) (msg, stack string) {
	var pe *emitter.PanicError
	if errors.As(err, &pe) {
		stack = string(pe.Stack)
	}
	return err.Error(), stack
}

// store is the bounded, Seq-ordered memory of a Ring and of the inspector's
// ring of requests.
type store struct {
	mu       sync.Mutex
	recs     []*delivery.Record // ascending Seq; the live ones are recs[head:]
	head     int
	byID     map[string]*delivery.Record // nil for the ring of requests
	seq      uint64
	bytes    int64
	maxRecs  int
	maxBytes int64

	delivery.Watchers
}

func (s *store) init(maxRecs int, maxBytes int64, byID bool) {
	s.maxRecs, s.maxBytes = maxRecs, maxBytes
	if byID {
		s.byID = map[string]*delivery.Record{}
	}
}

// size is what a record costs the ring's byte bound: its payload, headers,
// texts and a fixed overhead.
func size(rec *delivery.Record) int64 {
	n := int64(len(rec.Payload) + len(rec.ID) + len(rec.Name) + len(rec.Action) + len(rec.Reason) + 256)
	for k, vs := range rec.Header {
		n += int64(len(k)) + 16
		for _, v := range vs {
			n += int64(len(v)) + 16
		}
	}
	for _, a := range rec.Attempts {
		n += int64(len(a.Err) + len(a.Stack) + 64)
	}
	return n
}

func (s *store) add(rec *delivery.Record) {
	s.mu.Lock()
	s.seq++
	rec.Seq = s.seq
	s.recs = append(s.recs, rec)
	s.bytes += size(rec)
	if s.byID != nil && rec.ID != "" {
		s.byID[recordKey(rec)] = rec
	}
	for len(s.recs)-s.head > s.maxRecs || s.bytes > s.maxBytes && len(s.recs)-s.head > 1 {
		old := s.recs[s.head]
		s.recs[s.head] = nil
		s.head++
		s.bytes -= size(old)
		if s.byID != nil && s.byID[recordKey(old)] == old {
			delete(s.byID, recordKey(old))
		}
	}
	// Compact once the dropped front is as long as the live part, so that the
	// backing array stays within twice the bound.
	if s.head > 0 && s.head >= len(s.recs)-s.head {
		n := copy(s.recs, s.recs[s.head:])
		clear(s.recs[n:])
		s.recs, s.head = s.recs[:n], 0
	}
	c := copyRecord(rec)
	c.Payload = nil
	s.mu.Unlock()
	s.Notify(c)
}

func (s *store) len() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs) - s.head, s.bytes
}

// copyRecord copies what changes of a record (its attempts), so that the copy
// can be read without the lock; payload and headers are never changed.
func copyRecord(rec *delivery.Record) delivery.Record {
	c := *rec
	c.Attempts = append([]delivery.Attempt(nil), rec.Attempts...)
	return c
}

func (s *store) list(opts delivery.ListOptions) []delivery.Record {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []delivery.Record
	for i := len(s.recs) - 1; i >= s.head && len(out) < limit; i-- {
		rec := s.recs[i]
		if opts.Before != 0 && rec.Seq >= opts.Before ||
			opts.Status != "" && rec.Status != opts.Status ||
			opts.Name != "" && rec.Name != opts.Name ||
			opts.Tenant != "" && rec.Tenant != opts.Tenant {
			continue
		}
		c := copyRecord(rec)
		c.Payload = nil // lists carry no payload (delivery.Store)
		out = append(out, c)
	}
	return out
}

func (s *store) get(id string) (delivery.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.byID[id]
	if !ok {
		return delivery.Record{}, false
	}
	return copyRecord(rec), true
}

// getSeq finds a record by Seq, for the ring of requests whose ids are not
// unique (or missing).
func (s *store) getSeq(seq uint64) (delivery.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec := s.bySeq(seq); rec != nil {
		return copyRecord(rec), true
	}
	return delivery.Record{}, false
}

// bySeq finds a live record by Seq; the caller holds mu.
func (s *store) bySeq(seq uint64) *delivery.Record {
	live := s.recs[s.head:]
	lo, hi := 0, len(live)
	for lo < hi {
		m := (lo + hi) / 2
		if live[m].Seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(live) && live[lo].Seq == seq {
		return live[lo]
	}
	return nil
}

// startAttempt marks delivery id running with a new attempt, and returns it
// and the attempt's number.
func (s *store) startAttempt(id string) (delivery.Record, int, bool) {
	s.mu.Lock()
	rec, ok := s.byID[id]
	if !ok {
		s.mu.Unlock()
		return delivery.Record{}, 0, false
	}
	n := len(rec.Attempts) + 1
	rec.Attempts = append(rec.Attempts, delivery.Attempt{Number: n, Start: time.Now()})
	rec.Status = delivery.StatusRunning
	s.bytes += 64 // an attempt's share of size
	c := copyRecord(rec)
	s.mu.Unlock()
	w := c
	w.Payload = nil
	s.Notify(w)
	return c, n, true
}

// endAttempt records the end of attempt n of the record with seq, if the
// ring still holds it.
func (s *store) endAttempt(seq uint64, n int, d time.Duration, err error) {
	s.mu.Lock()
	rec := s.bySeq(seq)
	if rec == nil || n > len(rec.Attempts) {
		s.mu.Unlock()
		return
	}
	a := &rec.Attempts[n-1]
	a.Duration = d
	rec.Status = delivery.StatusHandled
	if err != nil {
		a.Err, a.Stack = errorText(err)
		s.bytes += int64(len(a.Err) + len(a.Stack))
		rec.Status = delivery.StatusFailed
	}
	c := copyRecord(rec)
	c.Payload = nil
	s.mu.Unlock()
	s.Notify(c)
}

// recordKey is what a record is found by (Get): its id, or "tenant/id" for a
// tenant's delivery, as the inbox does.
func recordKey(rec *delivery.Record) string {
	if rec.Tenant == "" {
		return rec.ID
	}
	return rec.Tenant + "/" + rec.ID
}
