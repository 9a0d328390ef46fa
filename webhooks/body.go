package webhooks

import (
	"errors"
	"io"
	"sync/atomic"
)

var (
	errTooLarge = errors.New("webhooks: body too large")
	// errBudget is readBody's error when the bytes it needs are not in the
	// budget of unverified bodies.
	errBudget = errors.New("webhooks: bodies being verified take the whole budget")
)

// initialBodyBuffer is the first buffer of a body without a Content-Length,
// and the smallest step by which a body outgrows its buffer.
const initialBodyBuffer = 64 << 10

// budget is a byte budget shared by every request of a Middleware: the bodies
// read and not yet verified. A nil *budget has no bound.
type budget struct {
	max  int64
	used atomic.Int64
}

// reserve takes n more bytes for a request that holds own already, or
// reports false when that would pass max. While nothing but own is reserved
// any n is granted, so that a budget smaller than one body cannot refuse that
// body for ever.
func (b *budget) reserve(n, own int64) bool {
	for {
		used := b.used.Load()
		if used > own && used+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// reservation is what one request holds of a budget.
type reservation struct {
	b    *budget
	held int64
}

// grow reserves n more bytes, or reports false.
func (r *reservation) grow(n int64) bool {
	if r == nil || r.b == nil {
		return true
	}
	if !r.b.reserve(n, r.held) {
		return false
	}
	r.held += n
	return true
}

// release gives back everything held. It may be called again.
func (r *reservation) release() {
	if r.b != nil && r.held != 0 {
		r.b.used.Add(-r.held)
		r.held = 0
	}
}

// readBody reads r into one buffer, writing each piece to h as it arrives, and
// stops at max+1 bytes with errTooLarge. Every buffer it allocates is first
// reserved in res (errBudget when that fails, before the buffer is made), so
// that the bodies being read across all connections stay within a budget.
//
//   - With a Content-Length, one buffer of that length and one byte more
//     (so that the read which finds the end needs no probe) is reserved and
//     made before any byte is read: a body costs its own size, and a request
//     that the budget cannot hold is refused before its body is read.
//   - Without one (chunked), or past the announced length, the body is read
//     into pieces, each an eighth of what has arrived (at least
//     initialBodyBuffer), so that at most about an eighth is unused while
//     reading; at the end the pieces are joined into one slice, which is
//     reserved too (about 2.1 times the body at that moment, counted).
func readBody(r io.Reader, contentLength, max int64, h io.Writer, res *reservation) ([]byte, error) {
	limit := max + 1
	first := min(limit, initialBodyBuffer)
	if contentLength >= 0 {
		first = min(limit, contentLength+1)
	}
	if !res.grow(first) {
		return nil, errBudget
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
			next := min(max64(n/8, initialBodyBuffer), limit-n)
			if !res.grow(next) {
				return nil, errBudget
			}
			pieces, held = append(pieces, cur), n
			cur = make([]byte, 0, next)
		}
		k, err := r.Read(cur[len(cur):cap(cur)])
		h.Write(cur[len(cur) : len(cur)+k])
		cur = cur[:len(cur)+k]
		if err == io.EOF {
			total := held + int64(len(cur))
			if total > max {
				return nil, errTooLarge
			}
			if pieces == nil {
				return cur, nil // the common case: one buffer, nothing to join
			}
			pieces = append(pieces, cur)
			if only, ok := single(pieces); ok {
				return only, nil
			}
			if !res.grow(total) {
				return nil, errBudget
			}
			return join(pieces, total), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// single returns the only non-empty piece (or an empty one when all are), and
// false when there are several.
func single(pieces [][]byte) ([]byte, bool) {
	var only []byte
	for _, p := range pieces {
		if len(p) > 0 {
			if only != nil {
				return nil, false
			}
			only = p
		}
	}
	if only == nil {
		return pieces[0][:0], true
	}
	return only, true
}

// join returns a copy of the pieces in one slice of n bytes.
func join(pieces [][]byte, n int64) []byte {
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
