package webhooks

import (
	"errors"
	"sync"
	"sync/atomic"
)

// errBusy and errClosedTracker are why tracker.take refuses a delivery.
var (
	errBusy          = errors.New("webhooks: too many deliveries in flight")
	errClosedTracker = errors.New("webhooks: closed")
)

// tracker is a Webhooks' one count of deliveries taken on and not finished:
// how many, their payload bytes, and their ids. Close waits on it; the
// Middleware bounds it (MaxInFlight, MaxRunningBytes). Once closed it refuses
// more and tells when the last one ends. The zero value is ready to use.
//
// Every delivery takes and finishes one, so no lock is common to them all:
// the count and the bytes are atomic words, each bounded by its own
// compare-and-swap, and the ids are kept in lists of their own lock, spread
// by the flight that holds them (flights come from a pool, whose values stay
// with the processor that put them back).
type tracker struct {
	// state is the count of deliveries taken and not finished, with
	// closedBit set by close: one word, so that no delivery is counted after
	// close found none left.
	state atomic.Int64
	bytes atomic.Int64

	mu   sync.Mutex    // held by close, and to close idle
	idle chan struct{} // made by close; closed when closed and none is left

	lists [flightLists]flightList
}

// closedBit marks a closed tracker's state.
const closedBit = 1 << 62

// flightLists is how many lists the ids are spread over.
const flightLists = 16

// flightList is one list of counted deliveries, on a cache line of its own.
type flightList struct {
	mu   sync.Mutex
	head *flight // a doubly linked list
	_    [48]byte
}

// flight is one delivery counted by a tracker. Flights are kept in a pool,
// so that counting a delivery allocates nothing.
type flight struct {
	id         string
	bytes      int64
	list       uint8 // its list in a tracker, fixed when the flight is made
	prev, next *flight
}

// flightsMade spreads new flights over the lists; only a flight the pool
// has to make reads it.
var flightsMade atomic.Uint32

var flights = sync.Pool{New: func() any { return &flight{list: uint8(flightsMade.Add(1) % flightLists)} }}

// take counts a delivery of size payload bytes, unless the tracker is closed
// (errClosedTracker) or taking it would pass maxN deliveries or maxBytes
// bytes (errBusy; a bound of zero or less is no bound). A delivery larger than
// maxBytes on its own is still taken when no other holds bytes, so that a
// bound below MaxBodyBytes cannot refuse a delivery for ever.
func (t *tracker) take(id string, size, maxN, maxBytes int64) (*flight, error) {
	for {
		s := t.state.Load()
		switch {
		case s&closedBit != 0:
			return nil, errClosedTracker
		case maxN > 0 && s >= maxN:
			return nil, errBusy
		}
		if t.state.CompareAndSwap(s, s+1) {
			break
		}
	}
	if maxBytes > 0 {
		for {
			b := t.bytes.Load()
			if b > 0 && b+size > maxBytes {
				t.uncount()
				return nil, errBusy
			}
			if t.bytes.CompareAndSwap(b, b+size) {
				break
			}
		}
	} else {
		t.bytes.Add(size)
	}
	f := flights.Get().(*flight)
	f.id, f.bytes = id, size
	l := &t.lists[f.list]
	l.mu.Lock()
	f.prev, f.next = nil, l.head
	if l.head != nil {
		l.head.prev = f
	}
	l.head = f
	l.mu.Unlock()
	return f, nil
}

// uncount takes one delivery off the count, and tells close's waiters when
// it was the last one of a closed tracker.
func (t *tracker) uncount() {
	if t.state.Add(-1) == closedBit {
		t.mu.Lock()
		close(t.idle)
		t.mu.Unlock()
	}
}

// finish ends a delivery that take counted; f must not be used after.
func (t *tracker) finish(f *flight) {
	l := &t.lists[f.list]
	l.mu.Lock()
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		l.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	l.mu.Unlock()
	t.bytes.Add(-f.bytes)
	t.uncount()
	*f = flight{list: f.list}
	flights.Put(f)
}

// load returns how many deliveries are counted and their bytes.
func (t *tracker) load() (n, bytes int64) {
	return t.state.Load() &^ closedBit, t.bytes.Load()
}

// running returns the ids of the deliveries take counted that have not
// finished.
func (t *tracker) running() []string {
	ids := make([]string, 0, t.state.Load()&^closedBit)
	for i := range t.lists {
		l := &t.lists[i]
		l.mu.Lock()
		for f := l.head; f != nil; f = f.next {
			ids = append(ids, f.id)
		}
		l.mu.Unlock()
	}
	return ids
}

// close refuses further deliveries and returns a channel closed when none is
// left.
func (t *tracker) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle == nil {
		t.idle = make(chan struct{})
		// Made before the bit is set: whoever sees the bit sees idle.
		if t.state.Or(closedBit) == 0 {
			close(t.idle)
		}
	}
	return t.idle
}
