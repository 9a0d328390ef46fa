package webhooks

import (
	"errors"
	"io"
)

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
