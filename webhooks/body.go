package webhooks

import (
	"errors"
	"forgehooks.dev/forgehooks/internal/waitroom"
	"io"
)

var (
	errTooLarge = errors.New("webhooks: body too large")
	// errBudget is readBody's error when the bytes it needs are not in the
	// budget of unverified bodies.
	errBudget = errors.New("webhooks: bodies being verified take the whole budget")
)

// readBody reads r into one buffer, writing each piece to h as it arrives, and
// stops at max+1 bytes with errTooLarge. The buffer starts at
// firstBodyBuffer (or the announced length and one byte, when smaller) and
// grows growth times as bytes arrive, up to the announced length and one
// byte (so that the read which finds the end needs no probe), or max+1
// without one: a body costs at most growth times the bytes received (and
// the first buffer), whatever it announces, until it passes smallBodyBytes:
// a larger body with a length then takes its whole length at once. A last
// buffer much larger than the body (no length given) is copied to one of
// the body's size.
// Each buffer is reserved in res before it is made (errBudget when that
// fails), and the one it replaces is given back once copied. A body with a
// length (at most max: a longer one was answered 413 from its header) may
// wait for room in res; one without a length may not, because it may yet
// pass max: when its next buffer does not fit at once, the rest of it is
// read and thrown away (see drainOver), so that it is answered 413 as soon
// as it crosses max, or 503 (errBudget) when it ends within it. p, when not
// nil, holds the body to a minimum rate (errSlowBody).
// growth is the factor by which a body's buffer grows: with 4, a 25 MiB body
// with a Content-Length allocates about 2.1 times its size in all.
const growth = 4

func readBody(r io.Reader, contentLength, max int64, h io.Writer, res *waitroom.Reservation, p *pacer) ([]byte, error) {
	limit := max + 1
	if contentLength >= 0 {
		limit = min(limit, contentLength+1)
	}
	var cur []byte
	left := func() int64 {
		if contentLength < 0 {
			return -1
		}
		return max64(contentLength-int64(len(cur)), 0)
	}
	p.first(left())
	defer p.done()
	// reserve takes n bytes of res for the next buffer: a body with a
	// length waits for room, one without reads on without keeping.
	reserve := func(n int64) error {
		if contentLength >= 0 {
			if !res.Grow(n) {
				return errBudget
			}
			return nil
		}
		if !res.TryGrow(n) {
			return drainOver(r, cur[:cap(cur)], int64(len(cur)), max, p)
		}
		return nil
	}
	size := min(limit, firstBodyBuffer)
	if err := reserve(size); err != nil {
		return nil, err
	}
	cur = make([]byte, 0, size)
	for {
		if len(cur) == cap(cur) {
			n := int64(len(cur))
			if n > max {
				return nil, errTooLarge
			}
			next := min(growth*n, max+1)
			if contentLength >= 0 && n < contentLength+1 {
				next = min(next, contentLength+1)
				if next > smallBodyBytes {
					next = contentLength + 1 // see budget: large bodies reserve at once
				}
			}
			if err := reserve(next); err != nil {
				return nil, err
			}
			grown := make([]byte, n, next)
			copy(grown, cur)
			res.Shrink(int64(cap(cur)))
			cur = grown
		}
		k, err := r.Read(cur[len(cur):cap(cur)])
		h.Write(cur[len(cur) : len(cur)+k])
		cur = cur[:len(cur)+k]
		if err == io.EOF {
			n := int64(len(cur))
			if n > max {
				return nil, errTooLarge
			}
			if slack := int64(cap(cur)) - n; slack > n/8 && slack > firstBodyBuffer {
				// Without a length (or past it) the last buffer may be up to
				// growth times too large: the handlers would hold that.
				if !res.Grow(n) {
					return nil, errBudget
				}
				exact := append([]byte(nil), cur...)
				res.Shrink(int64(cap(cur)))
				cur = exact
			}
			return cur, nil
		}
		if err = p.read(k, err, left()); err != nil {
			return nil, err
		}
	}
}

// drainOver reads on a body whose next buffer did not fit in the budget,
// throwing its bytes away (into scratch, or a small buffer when scratch is
// empty), to tell a body over max (errTooLarge, as soon as it crosses) from
// one within it (errBudget, at its end): a sender of an oversized body
// learns so at once, whatever the budget holds. n is the bytes read so far;
// p keeps pacing the reads.
func drainOver(r io.Reader, scratch []byte, n, max int64, p *pacer) error {
	if len(scratch) == 0 {
		scratch = make([]byte, 4<<10)
	}
	for {
		k, err := r.Read(scratch)
		n += int64(k)
		if n > max {
			return errTooLarge
		}
		if err == io.EOF {
			return errBudget
		}
		if err = p.read(k, err, -1); err != nil {
			return err
		}
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
