package webhooks

import (
	"errors"
	"net"
	"net/http"
	"os"
	"time"

	"forgehooks.dev/forgehooks/internal/waitroom"
)

// Admission of unverified bodies. A body is charged for the buffer it has
// grown into, which is at most four times the bytes actually received and
// the first 16 KiB (see readBody), never for the size it announces: a sender that announces 25 MiB
// and trickles bytes holds a few KiB. On top of that:
//
//   - a share of the budget (a quarter, at most 8 MiB) is kept for small
//     bodies (at most smallBodyBytes), which real deliveries mostly are, so
//     that large bodies, honest or not, never take it all;
//   - a body with a Content-Length that outgrows smallBodyBytes reserves
//     its whole length at once (readBody): large bodies then wait for room
//     holding 1 MiB each, instead of each holding part of what it needs
//     while none can finish;
//   - one client address holds at most half of the budget in buffers
//     larger than tinyBody, so that clients elsewhere (the forge) find room
//     whatever one address sends, and its own small deliveries still start;
//   - a body must keep a minimum transfer rate (MiddlewareOptions.MinBodyRate)
//     or it is cut with 408 and its bytes given back;
//   - a body with a Content-Length (at most MaxBodyBytes: a longer one is
//     answered 413 from its header) that does not fit waits a little
//     (budgetWait) for bytes to be given back before it is refused with
//     503, so that a burst of large valid deliveries is read a few at a
//     time instead of refused; a body without one never waits, since it
//     may yet pass MaxBodyBytes and must then be answered 413 at once
//     (readBody).
const (
	// smallBodyBytes is the largest body that may use the share of the
	// budget kept for small bodies.
	smallBodyBytes = 1 << 20
	// tinyBody is the largest buffer that a client's share does not bound:
	// the first two buffers of a body (16 and 64 KiB).
	tinyBody = 64 << 10
	// firstBodyBuffer is the first buffer of any body; later ones grow.
	firstBodyBuffer = 16 << 10
	// rateWindow is the window over which MinBodyRate is measured: every
	// window must bring MinBodyRate × rateWindow bytes, or the rest of the
	// body if that is less.
	rateWindow = 10 * time.Second
	// budgetWait is how long a body waits for room in the budget.
	budgetWait = 5 * time.Second
)

// DefaultMinBodyRate is the slowest a body may arrive, in bytes per second
// over each 10 s window: 16 KiB/s, which the forge's servers exceed by
// orders of magnitude, while a sender that trickles a body is cut within
// 10 seconds.
const DefaultMinBodyRate = 16 << 10

// errSlowBody is readBody's error when a body arrives below the minimum rate.
var errSlowBody = errors.New("webhooks: body arriving below the minimum rate")

// newBudget returns the budget of unverified bodies of max bytes (nil, no
// bound, when max is not positive), divided as the comment above says.
func newBudget(max int64) *waitroom.Budget {
	return waitroom.New(max, waitroom.Shares{
		SmallBody:    smallBodyBytes,
		KeptForSmall: min(max/4, 8<<20),
		PerKey:       max / 2,
		PerKeyFree:   tinyBody,
	})
}

// clientAddr is the address part of a request's RemoteAddr.
func clientAddr(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// pacer holds a body to a minimum rate: each window of rateWindow must bring
// min × rateWindow bytes (or the rest of the body). It sets the
// connection's read deadline to the end of the window, so that a read that
// waits for a trickling sender returns when the window ends; without a
// connection whose deadline can be set, the rate is checked after each read.
// It lives on the request's stack (start), so that pacing allocates nothing.
type pacer struct {
	conn     readDeadliner
	min      int64 // bytes per second; 0: no minimum
	window   time.Duration
	stop     time.Time // the server's ReadTimeout for the request; zero: none
	end      time.Time // end of the current window
	need     int64     // bytes the current window must bring
	got      int64     // bytes brought in the current window
	deadline bool      // a read deadline was set
}

// readDeadliner is what http.ResponseController sets a read deadline
// through: net/http's ResponseWriter, or one that a wrapper's Unwrap leads to.
type readDeadliner interface {
	SetReadDeadline(time.Time) error
}

// start readies p for a request's body and returns it; nil when min is 0.
func (p *pacer) start(rw http.ResponseWriter, r *http.Request, min int64, window time.Duration, start time.Time) *pacer {
	if min <= 0 {
		return nil
	}
	*p = pacer{conn: deadlinerOf(rw), min: min, window: window}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		p.stop = start.Add(srv.ReadTimeout)
	}
	return p
}

// deadlinerOf finds rw's read deadline as http.ResponseController does,
// through Unwrap, without allocating a controller; nil when there is none.
func deadlinerOf(rw http.ResponseWriter) readDeadliner {
	for {
		switch w := rw.(type) {
		case readDeadliner:
			return w
		case interface{ Unwrap() http.ResponseWriter }:
			rw = w.Unwrap()
		default:
			return nil
		}
	}
}

// first starts the body's first window: see begin.
func (p *pacer) first(left int64) {
	if p != nil {
		p.begin(left, time.Now())
	}
}

// begin starts a window at now in which left bytes at most remain to be
// read (-1: unknown), and sets the read deadline.
func (p *pacer) begin(left int64, now time.Time) {
	p.got = 0
	p.need = max(p.min*int64(p.window)/int64(time.Second), 1)
	if left >= 0 && left < p.need {
		p.need = max(left, 1)
	}
	p.end = now.Add(p.window)
	d := p.end
	if !p.stop.IsZero() && p.stop.Before(d) {
		d = p.stop // never later than the server's own timeout
	}
	if p.conn != nil && p.conn.SetReadDeadline(d) == nil {
		p.deadline = true
	}
}

// read accounts for k bytes read, with the read's error, and returns
// errSlowBody when the window ended short of its bytes. left is as for begin,
// after the read.
func (p *pacer) read(k int, err error, left int64) error {
	if p == nil {
		return err
	}
	p.got += int64(k)
	if p.got >= p.need {
		if err == nil && left != 0 {
			// A body read to its announced length needs no next window:
			// its next read finds the end without waiting.
			p.begin(left, time.Now())
		}
		return err
	}
	if err == nil && p.deadline {
		// The deadline ends the window: the first read past it fails.
		return nil
	}
	now := time.Now()
	if now.After(p.end) || err != nil && errors.Is(err, os.ErrDeadlineExceeded) && (p.stop.IsZero() || now.Before(p.stop)) {
		return errSlowBody
	}
	return err
}

// done lifts the read deadline the pacer set: the request's body is read.
func (p *pacer) done() {
	if p != nil && p.deadline {
		_ = p.conn.SetReadDeadline(time.Time{})
	}
}
