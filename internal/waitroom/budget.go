package waitroom

import (
	"sync"
	"sync/atomic"
	"time"
)

// Shares divide a Budget among its reservations, beyond the whole budget
// that bounds them all. Their zero value divides nothing.
type Shares struct {
	// SmallBody is the largest reservation that counts as small; a
	// reservation that grows past it becomes large. Zero: none is large.
	SmallBody int64
	// KeptForSmall is the part of the budget that large reservations may not
	// take, together: room that small ones (which real requests mostly are)
	// always find. Used only with SmallBody.
	KeptForSmall int64
	// PerKey is the most that the reservations of one key (a client
	// address, a channel) hold together, so that other keys find room.
	// Zero: no bound per key.
	PerKey int64
	// PerKeyFree is the largest growth of a small reservation that PerKey
	// does not bound, so that a key holding its share still gets its new
	// requests started. Zero: PerKey bounds every growth.
	PerKeyFree int64
}

// Budget is a byte budget that several requests share: each holds a
// Reservation that grows as its buffers do, and gives its bytes back when
// done. A nil *Budget has no bound, and every method of a nil *Reservation
// grants all and holds nothing. It is safe for concurrent use.
type Budget struct {
	max    int64
	shares Shares

	mu    sync.Mutex
	used  atomic.Int64     // written under mu; read anywhere (tests, logs)
	large int64            // held by large reservations
	keys  map[string]int64 // held per key
	freed Signal           // bytes given back
}

// New returns a budget of max bytes divided by s; nil (no bound) when max
// is not positive.
func New(max int64, s Shares) *Budget {
	if max <= 0 {
		return nil
	}
	return &Budget{max: max, shares: s}
}

// Max returns the budget's size; 0 for a nil Budget.
func (b *Budget) Max() int64 {
	if b == nil {
		return 0
	}
	return b.max
}

// Used returns the bytes held by every reservation now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Reserve returns an empty reservation of b for key, whose Grow waits for
// room until until (zero: Grow does not wait).
func (b *Budget) Reserve(key string, until time.Time) Reservation {
	return Reservation{b: b, key: key, until: until}
}

// tryReserve takes n more bytes for r, or reports false with a channel that
// is closed when bytes are given back. While nothing but r's own bytes are
// reserved (in all, by large reservations, by its key) n is granted, so that
// a budget smaller than one request cannot refuse that request for ever.
func (b *Budget) tryReserve(r *Reservation, n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	used := b.used.Load()
	if used > r.held && used+n > b.max {
		return false, b.freed.Wait()
	}
	s := b.shares
	becomesLarge := s.SmallBody > 0 && !r.large && r.held+n > s.SmallBody
	if r.large || becomesLarge {
		own, add := int64(0), n
		if r.large {
			own = r.held
		} else {
			add += r.held
		}
		if b.large > own && b.large+add > b.max-s.KeptForSmall {
			return false, b.freed.Wait()
		}
	}
	c := b.keys[r.key]
	if s.PerKey > 0 && (n > s.PerKeyFree || r.large) && c > r.held && c+n > s.PerKey {
		return false, b.freed.Wait()
	}
	b.used.Add(n)
	if becomesLarge {
		b.large += r.held
		r.large = true
	}
	if r.large {
		b.large += n
	}
	if b.keys == nil {
		b.keys = map[string]int64{}
	}
	b.keys[r.key] = c + n
	return true, nil
}

// give returns n bytes of r.
func (b *Budget) give(r *Reservation, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used.Add(-n)
	if r.large {
		b.large -= n
	}
	if c := b.keys[r.key] - n; c > 0 {
		b.keys[r.key] = c
	} else {
		delete(b.keys, r.key)
	}
	b.freed.Broadcast()
}

// Reservation is what one request holds of a Budget. Its zero value, and
// one of a nil Budget, has no bound. It is for one goroutine at a time.
type Reservation struct {
	b     *Budget
	key   string
	until time.Time
	held  int64
	large bool
}

// Held returns the bytes r holds.
func (r *Reservation) Held() int64 {
	if r == nil {
		return 0
	}
	return r.held
}

// Grow reserves n more bytes, waiting for room until the reservation's
// deadline, or reports false.
func (r *Reservation) Grow(n int64) bool {
	if r == nil || r.b == nil {
		return true
	}
	if !Until(r.until, func() (bool, <-chan struct{}) { return r.b.tryReserve(r, n) }) {
		return false
	}
	r.held += n
	return true
}

// TryGrow reserves n more bytes if they fit now, or reports false.
func (r *Reservation) TryGrow(n int64) bool {
	if r == nil || r.b == nil {
		return true
	}
	if ok, _ := r.b.tryReserve(r, n); !ok {
		return false
	}
	r.held += n
	return true
}

// Shrink gives back n of the bytes held.
func (r *Reservation) Shrink(n int64) {
	if r == nil || r.b == nil || n == 0 {
		return
	}
	r.b.give(r, n)
	r.held -= n
}

// Release gives back everything held. It may be called again.
func (r *Reservation) Release() {
	if r != nil {
		r.Shrink(r.held)
	}
}
