package webhooks

import (
	"errors"
	"sync"
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
type tracker struct {
	mu     sync.Mutex
	n      int64
	bytes  int64
	head   *flight // the deliveries counted, a doubly linked list
	closed bool
	idle   chan struct{} // made by close; closed when closed and n == 0
}

// flight is one delivery counted by a tracker. Flights are kept in a pool,
// so that counting a delivery allocates nothing.
type flight struct {
	id         string
	bytes      int64
	prev, next *flight
}

var flights = sync.Pool{New: func() any { return new(flight) }}

// take counts a delivery of size payload bytes, unless the tracker is closed
// (errClosedTracker) or taking it would pass maxN deliveries or maxBytes
// bytes (errBusy; a bound of zero or less is no bound). A delivery larger than
// maxBytes on its own is still taken when nothing else runs, so that a bound
// below MaxBodyBytes cannot refuse a delivery for ever.
func (t *tracker) take(id string, size, maxN, maxBytes int64) (*flight, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, errClosedTracker
	case maxN > 0 && t.n >= maxN,
		maxBytes > 0 && t.n > 0 && t.bytes+size > maxBytes:
		return nil, errBusy
	}
	f := flights.Get().(*flight)
	f.id, f.bytes, f.prev, f.next = id, size, nil, t.head
	if t.head != nil {
		t.head.prev = f
	}
	t.head = f
	t.n++
	t.bytes += size
	return f, nil
}

// finish ends a delivery that take counted; f must not be used after.
func (t *tracker) finish(f *flight) {
	t.mu.Lock()
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		t.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	t.n--
	t.bytes -= f.bytes
	if t.n == 0 && t.closed {
		close(t.idle)
	}
	t.mu.Unlock()
	*f = flight{}
	flights.Put(f)
}

// load returns how many deliveries are counted and their bytes.
func (t *tracker) load() (n, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n, t.bytes
}

// running returns the ids of the deliveries take counted that have not
// finished.
func (t *tracker) running() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, t.n)
	for f := t.head; f != nil; f = f.next {
		ids = append(ids, f.id)
	}
	return ids
}

// close refuses further deliveries and returns a channel closed when none is
// left.
func (t *tracker) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		t.idle = make(chan struct{})
		if t.n == 0 {
			close(t.idle)
		}
	}
	return t.idle
}
