package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
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

// budget is the pending budget, shared by every channel.
type budget struct {
	max   int64
	mu    sync.Mutex
	total int64
	by    map[string]int64 // per channel
	freed waitroom.Signal  // bytes given back
}

func (b *budget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// reservation is what one delivery holds of the budget.
type reservation struct {
	b       *budget
	channel string
	until   time.Time
	held    int64
}

// grow takes n more bytes, waiting for room until r.until, or reports
// false. While nothing but r's own bytes are reserved (in all, and by its
// channel) n is granted: a budget smaller than one delivery cannot refuse
// it for ever.
func (r *reservation) grow(n int64) bool {
	if !waitroom.Until(r.until, func() (bool, <-chan struct{}) { return r.b.tryReserve(r, n) }) {
		return false
	}
	r.held += n
	return true
}

// tryReserve takes n more bytes for r, or reports false with the channel
// closed when bytes are next given back.
func (b *budget) tryReserve(r *reservation, n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.by[r.channel]
	if (b.total > r.held && b.total+n > b.max) || (c > r.held && c+n > b.max/2) {
		return false, b.freed.Wait()
	}
	b.total += n
	if b.by == nil {
		b.by = map[string]int64{}
	}
	b.by[r.channel] = c + n
	return true, nil
}

// shrink gives back n bytes.
func (r *reservation) shrink(n int64) {
	if n == 0 {
		return
	}
	b := r.b
	b.mu.Lock()
	b.total -= n
	if c := b.by[r.channel] - n; c > 0 {
		b.by[r.channel] = c
	} else {
		delete(b.by, r.channel)
	}
	b.freed.Broadcast()
	b.mu.Unlock()
	r.held -= n
}

// post publishes one delivery.
func (s *Server) post(w http.ResponseWriter, r *http.Request, name string) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		http.Error(w, fmt.Sprintf("body of %d bytes is over the %d-byte limit", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return
	}
	start := time.Now()
	res := &reservation{b: &s.pending, channel: name, until: start.Add(budgetWait)}
	defer func() { res.shrink(res.held) }()
	rd := &reader{r: http.MaxBytesReader(w, r.Body, limit), rc: http.NewResponseController(w), min: s.opts.MinBodyRate,
		stop: start.Add(s.opts.ReadTimeout)}
	body, err := rd.readBody(r.ContentLength, limit, res)
	if err == nil && !res.grow(pendingCost(int64(len(body)))-res.held) {
		err = errBudget
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, fmt.Sprintf("body is over the %d-byte limit", limit), http.StatusRequestEntityTooLarge)
		case errors.Is(err, errBudget):
			s.log.Warn("delivery refused: too many bytes being received", "channel", name, "content_length", r.ContentLength, "held", res.held, "max_pending_bytes", s.opts.MaxPendingBytes)
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
func (rd *reader) readBody(announced, limit int64, res *reservation) ([]byte, error) {
	cap0 := limit + 1
	if announced >= 0 {
		cap0 = announced
	}
	if !res.grow(min(cap0, firstBuffer)) {
		return nil, errBudget
	}
	buf := make([]byte, 0, min(cap0, firstBuffer))
	left := func() int64 {
		if announced < 0 {
			return -1
		}
		return announced - int64(len(buf))
	}
	rd.begin(left())
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
			if !res.grow(next) {
				return nil, errBudget
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			res.shrink(int64(cap(buf)))
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
		rd.got += int64(k)
		if rd.min > 0 && rd.got >= rd.need && err == nil {
			rd.begin(left())
			continue
		}
		if err != nil {
			now := time.Now()
			if errors.Is(err, os.ErrDeadlineExceeded) && rd.min > 0 && !now.Before(rd.end) && now.Before(rd.stop) {
				return nil, errSlow
			}
			return nil, err
		}
		if rd.min > 0 && time.Now().After(rd.end) {
			return nil, errSlow
		}
	}
}
