package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/waitroom"
)

// Admission of deliveries being received. A delivery is charged for what it
// holds, never for what it announces: its body's buffer grows growth times
// as bytes arrive (a body with a Content-Length past smallBody takes its
// whole length at once, so that large ones wait for room holding little
// instead of each holding part of what it needs), and once read it is
// charged pendingCost for its message being built. One channel holds at
// most half of the budget; a body must keep MinBodyRate over each
// rateWindow or it is cut with 408; a delivery that does not fit waits up
// to budgetWait for room.
const (
	firstBuffer = 16 << 10
	growth      = 4
	smallBody   = 1 << 20
	rateWindow  = 10 * time.Second
	budgetWait  = 5 * time.Second
)

var (
	errBudget = errors.New("proxy: deliveries being received take the budget")
	errSlow   = errors.New("proxy: body arriving below the minimum rate")
)

// pendingCost is what a delivery of n bytes costs once read: the body and
// its message being built (the body twice as a JSON string, its base64, the
// headers), with room to spare.
func pendingCost(n int64) int64 { return 5*n + 64<<10 }

// newBudget returns the pending budget of max bytes, shared by every
// channel, one channel holding at most half of it.
func newBudget(max int64) *waitroom.Budget {
	return waitroom.New(max, waitroom.Shares{PerKey: max / 2})
}

// post publishes one delivery.
func (s *Server) post(w http.ResponseWriter, r *http.Request, name string) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		http.Error(w, fmt.Sprintf("body of %d bytes is over the %d-byte limit", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return
	}
	start := time.Now()
	reserved := s.pending.Reserve(name, start.Add(budgetWait))
	res := &reserved
	defer res.Release()
	rd := &reader{r: http.MaxBytesReader(w, r.Body, limit), rc: http.NewResponseController(w), min: s.opts.MinBodyRate,
		stop: start.Add(s.opts.ReadTimeout)}
	body, err := rd.readBody(r.ContentLength, limit, res)
	if err == nil && !res.Grow(pendingCost(int64(len(body)))-res.Held()) {
		err = errBudget
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, fmt.Sprintf("body is over the %d-byte limit", limit), http.StatusRequestEntityTooLarge)
		case errors.Is(err, errBudget):
			s.log.Warn("delivery refused: too many bytes being received", "channel", name, "content_length", r.ContentLength, "held", res.Held(), "max_pending_bytes", s.opts.MaxPendingBytes)
			w.Header().Set("Retry-After", "5")
			w.Header().Set("Connection", "close")
			http.Error(w, "busy receiving other deliveries: retry later", http.StatusServiceUnavailable)
		case errors.Is(err, errSlow):
			s.log.Warn("delivery cut: body below the minimum rate", "channel", name, "content_length", r.ContentLength, "min_body_rate", s.opts.MinBodyRate)
			w.Header().Set("Connection", "close")
			http.Error(w, "request body arriving too slowly", http.StatusRequestTimeout)
		default:
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	now := time.Now()
	id, subs, jerr, err := s.publish(name, encodeMessage(r, body, now), now)
	if err != nil {
		s.log.Error("channel unavailable", "channel", name, "err", err)
		w.Header().Set("Retry-After", "60")
		http.Error(w, "channel unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if jerr != nil {
		// The delivery still went to the subscribers and the memory buffer.
		s.log.Error("journal write failed", "channel", name, "id", id, "err", jerr)
	}
	s.log.Info("delivery", "channel", name, "id", id, "event", clip.String(r.Header.Get("X-Forge-Event")),
		"delivery", clip.String(r.Header.Get("X-Forge-Delivery")), "bytes", len(body), "subscribers", subs)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Event-Id", id)
	w.Header().Set(HeaderSubscribers, strconv.Itoa(subs))
	io.WriteString(w, "ok\n")
}

// reader reads a body at a minimum rate: each window of rateWindow must
// bring min × rateWindow bytes (or the rest of the body), enforced through
// the connection's read deadline, never later than stop.
type reader struct {
	r    io.Reader
	rc   *http.ResponseController
	min  int64 // bytes per second; <= 0: no minimum
	stop time.Time
	end  time.Time
	need int64
	got  int64
}

func (rd *reader) begin(left int64) {
	d := rd.stop
	if rd.min > 0 {
		rd.got, rd.need, rd.end = 0, max(rd.min*int64(rateWindow/time.Second), 1), time.Now().Add(rateWindow)
		if left >= 0 && left < rd.need {
			rd.need = max(left, 1)
		}
		if rd.end.Before(d) {
			d = rd.end
		}
	}
	_ = rd.rc.SetReadDeadline(d)
}

// readBody reads a body of the announced length (-1: unknown, up to limit)
// into one buffer that grows as bytes arrive, each growth reserved in res.
// A body with a length (at most limit) may wait for room; one without may
// not, since it may yet pass limit: when its next buffer does not fit at
// once, the rest of it is read and thrown away, so that it fails as soon as
// it crosses limit (413), or with errBudget at its end.
func (rd *reader) readBody(announced, limit int64, res *waitroom.Reservation) ([]byte, error) {
	cap0 := limit + 1
	if announced >= 0 {
		cap0 = announced
	}
	var buf []byte
	left := func() int64 {
		if announced < 0 {
			return -1
		}
		return announced - int64(len(buf))
	}
	rd.begin(left())
	reserve := func(n int64) error {
		switch {
		case announced >= 0:
			if !res.Grow(n) {
				return errBudget
			}
		case !res.TryGrow(n):
			return rd.drain(buf[:cap(buf)], left)
		}
		return nil
	}
	if err := reserve(min(cap0, firstBuffer)); err != nil {
		return nil, err
	}
	buf = make([]byte, 0, min(cap0, firstBuffer))
	for {
		if len(buf) == cap(buf) {
			if announced >= 0 && int64(len(buf)) == announced {
				return buf, nil
			}
			next := min(growth*int64(cap(buf)), limit+1)
			if announced >= 0 {
				next = min(next, announced)
				if next > smallBody {
					next = announced
				}
			}
			if err := reserve(next); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			res.Shrink(int64(cap(buf)))
			buf = grown
		}
		k, err := rd.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			if announced >= 0 && int64(len(buf)) < announced {
				return nil, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err = rd.paced(k, err, left); err != nil {
			return nil, err
		}
	}
}

// paced accounts for a read of k bytes that ended with err (not io.EOF),
// and returns errSlow when the window ended short of its bytes.
func (rd *reader) paced(k int, err error, left func() int64) error {
	rd.got += int64(k)
	if rd.min > 0 && rd.got >= rd.need && err == nil {
		rd.begin(left())
		return nil
	}
	if err != nil {
		now := time.Now()
		if errors.Is(err, os.ErrDeadlineExceeded) && rd.min > 0 && !now.Before(rd.end) && now.Before(rd.stop) {
			return errSlow
		}
		return err
	}
	if rd.min > 0 && time.Now().After(rd.end) {
		return errSlow
	}
	return nil
}

// drain reads the rest of a body without a length into scratch (a small
// buffer when it is empty), throwing it away, still paced: the reader's
// limit (http.MaxBytesReader) fails it once it crosses its limit, and
// errBudget is returned at its end.
func (rd *reader) drain(scratch []byte, left func() int64) error {
	if len(scratch) == 0 {
		scratch = make([]byte, 4<<10)
	}
	for {
		k, err := rd.r.Read(scratch)
		if err == io.EOF {
			return errBudget
		}
		if err = rd.paced(k, err, left); err != nil {
			return err
		}
	}
}
