package emitter

import (
	"context"
	"encoding/json"
	"sync"

	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// Event is one delivery as handlers see it.
type Event struct {
	// ID is the delivery's unique id (the forge's delivery header); may be empty.
	ID string
	// Name is the event name (the forge's event header), such as "issues". Handlers
	// registered for "issues.opened" see Name "issues" too.
	Name string
	// Payload is the delivery body, a JSON object, as received. Handlers must
	// not modify it: every handler of the delivery gets the same bytes, and
	// typed payloads decoded from a payload received with ReceiveOwned (every
	// body the webhooks middleware reads) share them (see PayloadOwned).
	Payload json.RawMessage

	// memo is shared by every handler of one delivery, so that a payload is decoded
	// once per type however many typed handlers ask for it. Nil outside Receive.
	memo *memo

	// scan is what Receive's validation found, for the payload in scanned (the
	// same slice: same first byte, same length). Action uses it only while
	// Payload is still that slice, so an Event whose Payload was replaced (by a
	// Transform, say) is scanned afresh.
	scanned json.RawMessage
	scan    jsonscan.Result
	// owned says that Payload came in through ReceiveOwned.
	owned bool
	// (An action known without the scan is kept in memo instead: an Event
	// over 128 bytes would cost each handler's goroutine an allocation more.)
}

// Handler handles an event. A returned error (or a panic) is collected by Receive
// and reported to the error handlers.
type Handler func(ctx context.Context, e Event) error

// ErrorHandler is told about every failed delivery.
type ErrorHandler func(ctx context.Context, err *Error)

// Action returns the payload's top-level "action" member when it is a string, and ""
// otherwise (no such member, not a string, or a payload that is not a JSON object).
// It agrees with decoding the payload with encoding/json: with duplicate keys the
// last one counts, escapes are decoded, nested "action" keys do not count. It does
// not decode the payload: during Receive it reuses what validation found, and
// otherwise scans the bytes once.
func (e Event) Action() string {
	if len(e.Payload) > 0 && len(e.scanned) == len(e.Payload) && &e.scanned[0] == &e.Payload[0] {
		if e.memo != nil && e.memo.known {
			return e.memo.action
		}
		return e.scan.String(e.Payload)
	}
	res, err := jsonscan.Scan(e.Payload)
	if err != nil {
		return ""
	}
	return res.String(e.Payload)
}

// PayloadOwned reports whether the Event's Payload was handed over to the
// emitter (ReceiveOwned): nothing modifies or reuses its bytes for as long
// as any value made from them lives, so that a decoder may share them (a
// generated payload package's strings then point into Payload instead of a
// copy of it). False outside Receive and for a transformed Event.
func (e Event) PayloadOwned() bool { return e.owned }

// Memo returns the value that fn computes for this delivery under key, calling fn
// at most once per delivery and key however many handlers ask, concurrently or not.
// Typed handlers use it to decode a payload once. Outside Receive (an Event built
// by hand), fn is simply called.
func (e Event) Memo(key any, fn func() (any, error)) (any, error) {
	if e.memo == nil {
		return fn()
	}
	return e.memo.get(key, fn)
}

// memo holds a delivery's decoded values by key. The first key's entry is
// inline: a delivery is mostly decoded into one type, and then needs no map.
type memo struct {
	mu       sync.Mutex
	used     bool // first holds firstKey's entry
	firstKey any
	first    memoEntry
	m        map[any]*memoEntry // the other keys'

	// known says that the delivery's payload was validated without
	// Receive's scan (a Decoder decoded it, or the inbox vouched for it),
	// and its action is action.
	known  bool
	action string
}

type memoEntry struct {
	once sync.Once
	v    any
	err  error
}

func (m *memo) get(key any, fn func() (any, error)) (any, error) {
	m.mu.Lock()
	ent := m.entry(key)
	m.mu.Unlock()
	ent.once.Do(func() { ent.v, ent.err = fn() })
	return ent.v, ent.err
}

// entry returns key's entry, making it if needed. m.mu must be held.
func (m *memo) entry(key any) *memoEntry {
	switch {
	case !m.used:
		m.used, m.firstKey = true, key
		return &m.first
	case m.firstKey == key:
		return &m.first
	}
	if m.m == nil {
		m.m = make(map[any]*memoEntry, 1)
	}
	ent := m.m[key]
	if ent == nil {
		ent = new(memoEntry)
		m.m[key] = ent
	}
	return ent
}

// set keeps v under key, as if get had computed it; before any handler runs.
func (m *memo) set(key, v any) {
	ent := m.entry(key)
	ent.once.Do(func() { ent.v = v })
}
