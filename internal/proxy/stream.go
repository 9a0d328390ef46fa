package proxy

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/sse"
)

// Subscribers: one Server-Sent Events stream per subscriber.

// stream serves one subscriber until it leaves, a write fails or times out, or
// the Server closes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, name string) {
	// Checked and counted under mu, which Close holds to close done, so that
	// no stream starts after Close began waiting for them.
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	default:
	}
	s.streams.Add(1)
	s.mu.Unlock()
	defer s.streams.Done()
	lastID := r.Header.Get("Last-Event-ID")
	c, sub, cursor, issued, err := s.subscribe(name, lastID)
	if err != nil {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "channel unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer func() { c.unsubscribe(sub, time.Now()) }()

	rc := http.NewResponseController(w)
	// A stream is long-lived: no read deadline (the server's would cancel it).
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell reverse proxies not to buffer
	w.WriteHeader(http.StatusOK)

	c.mu.Lock()
	head, buffered := c.head, len(c.entries)
	c.mu.Unlock()
	replay := head - cursor
	if lastID != "" && !issued {
		s.log.Warn("Last-Event-ID not issued by this proxy for this channel now: nothing replayed", "channel", name, "last_event_id", clip.String(lastID))
	}
	s.log.Info("subscribed", "channel", name, "last_event_id", clip.String(lastID), "replay", replay, "buffered", buffered)
	defer s.log.Info("unsubscribed", "channel", name)

	// "ready" carries the head's id only when nothing is to be replayed: a
	// client then holds an id to come back with even if no delivery comes
	// before it disconnects. With a replay to follow, the replayed events carry
	// the ids, so that a disconnection halfway loses nothing.
	ready := sse.Frame{Type: "ready", Retry: s.opts.Retry,
		Data: []byte(`{"channel":` + strconv.Quote(name) + `,"replay":` + strconv.FormatUint(replay, 10) + `}`)}
	if replay == 0 {
		ready.ID = s.eventID(c, head)
	}
	buf, _ := sse.AppendFrame(nil, ready)
	if !s.write(rc, w, buf) {
		return
	}
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	pending := replay > 0
	for {
		for pending {
			e, lost, ok := c.next(cursor)
			if lost > 0 {
				s.log.Warn("subscriber missed deliveries no longer buffered", "channel", name, "lost", lost)
				if !s.write(rc, w, sse.AppendComment(nil, strconv.FormatUint(lost, 10)+" deliveries were dropped from the replay buffer before they could be sent")) {
					return
				}
				cursor += lost
			}
			if !ok {
				pending = false
				break
			}
			if !s.writeEntry(rc, w, c, e) {
				return
			}
			cursor = e.seq
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-sub.notify:
			pending = true
		case <-keep.C:
			if !s.write(rc, w, []byte(": keep-alive\n")) {
				return
			}
		}
	}
}

func (s *Server) writeEntry(rc *http.ResponseController, w http.ResponseWriter, c *channel, e entry) bool {
	// Written in pieces: the data can be tens of MiB, and needs no copy.
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, err := io.WriteString(w, "id: "+s.eventID(c, e.seq)+"\ndata: "); err != nil {
		return false
	}
	if _, err := w.Write(e.data); err != nil {
		return false
	}
	if _, err := io.WriteString(w, "\n\n"); err != nil {
		return false
	}
	return rc.Flush() == nil
}

func (s *Server) write(rc *http.ResponseController, w http.ResponseWriter, b []byte) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}
