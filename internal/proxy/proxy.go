// Package proxy is a webhook channel server in the manner of smee: a delivery
// POSTed to a channel URL is sent, as a Server-Sent Event, to every client
// subscribed to that URL, so that a forge on the internet can reach a developer's
// machine that it cannot connect to, or so that the whole path runs on one
// machine.
//
// Routes:
//
//	GET|HEAD /new        307 to a new random channel URL
//	POST     /{channel}  fan a delivery out to the channel's subscribers
//	GET      /{channel}  with Accept: text/event-stream, subscribe; otherwise a page
//	GET      /           a page saying what this is
//
// A subscriber first gets a "ready" event, then one "message" event per delivery,
// whose data is a JSON object: the delivery's headers (lowercased names), "body"
// (the payload as JSON), "bodyB" (the exact body bytes, standard padded base64),
// "query" and "timestamp" (Unix milliseconds). Comments keep idle streams open.
//
// Beyond smee, every message has an event id, and each channel keeps a bounded
// replay buffer: a client that reconnects with Last-Event-ID gets what was sent
// while it was away. With a journal directory the buffers are kept on disk too,
// so a restarted proxy still replays them; without one, a restarted proxy replays
// what it received since it started to a client that comes back with an id from
// before the restart.
package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/internal/sse"
)

// HeaderSubscribers is the header of a POST's answer that gives the number of
// subscribers the delivery was sent to live, so that a sender can warn when no
// one listens.
const HeaderSubscribers = "X-Channel-Subscribers"

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 25 << 20 // the forge's own limit for a delivery
	DefaultReplayEvents = 100
	DefaultReplayBytes  = 256 << 20
	DefaultReplayAge    = 24 * time.Hour
	DefaultKeepAlive    = 30 * time.Second
	DefaultRetry        = 2 * time.Second
	DefaultWriteTimeout = 2 * time.Minute
	DefaultReadTimeout  = 60 * time.Second
	DefaultMaxChannels  = 1000
)

// Options configure a Server. Zero values take the defaults above.
type Options struct {
	// MaxBodyBytes bounds a delivery's body; larger ones get 413.
	MaxBodyBytes int64
	// ReplayEvents, ReplayBytes and ReplayAge bound each channel's replay
	// buffer: the oldest deliveries are dropped beyond any of them. The bytes
	// are those of the messages, about 2.4 times their bodies.
	ReplayEvents int
	ReplayBytes  int64
	ReplayAge    time.Duration
	// KeepAlive is how often an idle stream gets a comment.
	KeepAlive time.Duration
	// Retry is the reconnection delay advised to subscribers.
	Retry time.Duration
	// WriteTimeout bounds the writing of one event to one subscriber; a
	// subscriber slower than that is disconnected (and can come back with
	// Last-Event-ID).
	WriteTimeout time.Duration
	// ReadTimeout bounds the reading of one delivery's body.
	ReadTimeout time.Duration
	// MaxChannels bounds the channels held at once; a delivery or a
	// subscription to a new channel beyond it gets 503.
	MaxChannels int
	// JournalDir, when set, keeps the replay buffers in files there, so that
	// they survive a restart. It is created if needed.
	JournalDir string
	// Logger receives one line per delivery and per subscription; nil logs
	// nothing.
	Logger *slog.Logger
}

// Server serves channels. Create it with New; it is an http.Handler.
type Server struct {
	opts Options
	lim  limits
	log  *slog.Logger

	mu    sync.Mutex
	chans map[string]*channel

	done      chan struct{}
	closeOnce sync.Once
	streams   sync.WaitGroup
}

// New returns a Server. With Options.JournalDir, it loads the channels kept
// there, and fails when the directory cannot be used or holds a damaged journal.
func New(opts Options) (*Server, error) {
	setDefault(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&opts.ReplayEvents, DefaultReplayEvents)
	setDefault(&opts.ReplayBytes, DefaultReplayBytes)
	setDefault(&opts.ReplayAge, DefaultReplayAge)
	setDefault(&opts.KeepAlive, DefaultKeepAlive)
	setDefault(&opts.Retry, DefaultRetry)
	setDefault(&opts.WriteTimeout, DefaultWriteTimeout)
	setDefault(&opts.ReadTimeout, DefaultReadTimeout)
	setDefault(&opts.MaxChannels, DefaultMaxChannels)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:  opts,
		lim:   limits{events: opts.ReplayEvents, bytes: opts.ReplayBytes, age: opts.ReplayAge},
		log:   log,
		chans: map[string]*channel{},
		done:  make(chan struct{}),
	}
	if opts.JournalDir != "" {
		chans, err := loadJournals(opts.JournalDir, time.Now(), s.lim)
		if err != nil {
			return nil, err
		}
		s.chans = chans
		for name, c := range chans {
			log.Info("channel restored from journal", "channel", name, "buffered", len(c.entries), "last_id", c.id(c.head))
		}
	}
	go s.sweeper()
	return s, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Close ends every open stream and the journal files. Call it before (or while)
// shutting the http.Server down: streams do not end by themselves, and
// http.Server.Shutdown waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Unlock()
	s.streams.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, c := range s.chans {
		c.mu.Lock()
		if c.journal != nil {
			errs = append(errs, c.journal.close())
		}
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// sweeper drops aged deliveries and empty channels once a minute.
func (s *Server) sweeper() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.mu.Lock()
			for name, c := range s.chans {
				if c.sweep(now, s.lim) {
					s.dropLocked(name, c)
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *Server) dropLocked(name string, c *channel) {
	delete(s.chans, name)
	if c.journal != nil {
		c.journal.remove()
	}
}

// errTooManyChannels is returned by channel when MaxChannels is reached.
var errTooManyChannels = errors.New("too many channels")

// channel returns the named channel, creating it.
func (s *Server) channel(name string) (*channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chans[name]; c != nil {
		return c, nil
	}
	if len(s.chans) >= s.opts.MaxChannels {
		return nil, errTooManyChannels
	}
	c := newChannel(name, newEpoch())
	if s.opts.JournalDir != "" {
		j, err := createJournal(s.opts.JournalDir, name, c.epoch)
		if err != nil {
			return nil, err
		}
		c.journal = j
	}
	s.chans[name] = c
	return c, nil
}

// release drops c when it is empty after sub unsubscribed.
func (s *Server) release(name string, c *channel, sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.unsubscribe(sub) && s.chans[name] == c {
		s.dropLocked(name, c)
	}
}

// publish publishes data on the named channel, looking it up again if it was
// dropped in between.
func (s *Server) publish(name string, data []byte, now time.Time) (*channel, string, error, error) {
	for {
		c, err := s.channel(name)
		if err != nil {
			return nil, "", nil, err
		}
		if id, jerr, ok := c.publish(data, now, s.lim); ok {
			return c, id, jerr, nil
		}
	}
}

// subscribe subscribes to the named channel, looking it up again if it was
// dropped in between.
func (s *Server) subscribe(name, lastEventID string) (*channel, *subscriber, uint64, error) {
	for {
		c, err := s.channel(name)
		if err != nil {
			return nil, nil, 0, err
		}
		if sub, cursor, ok := c.subscribe(lastEventID); ok {
			return c, sub, cursor, nil
		}
	}
}

// validChannel reports whether name can be a channel: 1 to 64 letters, digits,
// '-' or '_', and not "new".
func validChannel(name string) bool {
	if name == "" || len(name) > 64 || name == "new" {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// NewChannelName returns a random channel name, as GET /new redirects to.
func NewChannelName() string { return rand.Text()[:16] }

// ServeHTTP routes a request; see the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		page(w, http.StatusOK, "forgehooks proxy", `<p>A webhook channel server. <a href="/new">Start a new channel</a>.</p>`)
	case p == "/new":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		http.Redirect(w, r, baseURL(r)+"/"+NewChannelName(), http.StatusTemporaryRedirect)
	default:
		name := p[1:]
		if !validChannel(name) {
			http.Error(w, "not a channel: a channel name is 1 to 64 letters, digits, '-' or '_'", http.StatusNotFound)
			return
		}
		switch r.Method {
		case http.MethodPost:
			s.post(w, r, name)
		case http.MethodGet, http.MethodHead:
			if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				s.stream(w, r, name)
				return
			}
			url := html.EscapeString(baseURL(r) + "/" + name)
			page(w, http.StatusOK, "forgehooks proxy channel "+name,
				"<p>Channel <code>"+url+"</code>. Enter it as the webhook URL on the forge, and receive its deliveries with:</p>"+
					"<pre>forgehooks relay --source "+url+" --target http://127.0.0.1:3000/api/forge/webhooks</pre>"+
					"<p>This page is not an event stream: clients must send <code>Accept: text/event-stream</code>.</p>")
		default:
			methodNotAllowed(w, "GET, HEAD, POST")
		}
	}
}

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1>%s\n", html.EscapeString(title), html.EscapeString(title), body)
}

// post publishes one delivery.
func (s *Server) post(w http.ResponseWriter, r *http.Request, name string) {
	max := s.opts.MaxBodyBytes
	if r.ContentLength > max {
		http.Error(w, fmt.Sprintf("body of %d bytes is over the %d-byte limit", r.ContentLength, max), http.StatusRequestEntityTooLarge)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.ReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("body is over the %d-byte limit", max), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	c, id, jerr, err := s.publish(name, encodeMessage(r, body, now), now)
	if err != nil {
		s.log.Error("channel unavailable", "channel", name, "err", err)
		http.Error(w, "channel unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if jerr != nil {
		// The delivery still went to the subscribers and the memory buffer.
		s.log.Error("journal write failed", "channel", name, "id", id, "err", jerr)
	}
	c.mu.Lock()
	subs := len(c.subs)
	c.mu.Unlock()
	s.log.Info("delivery", "channel", name, "id", id, "event", r.Header.Get("X-Forge-Event"),
		"delivery", r.Header.Get("X-Forge-Delivery"), "bytes", len(body), "subscribers", subs)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Event-Id", id)
	w.Header().Set(HeaderSubscribers, strconv.Itoa(subs))
	io.WriteString(w, "ok\n")
}

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
	c, sub, cursor, err := s.subscribe(name, lastID)
	if err != nil {
		http.Error(w, "channel unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer s.release(name, c, sub)

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
	s.log.Info("subscribed", "channel", name, "last_event_id", lastID, "replay", replay, "buffered", buffered)
	defer s.log.Info("unsubscribed", "channel", name)

	// "ready" carries the head's id only when nothing is to be replayed: a
	// client then holds an id to come back with even if no delivery comes
	// before it disconnects. With a replay to follow, the replayed events carry
	// the ids, so that a disconnection halfway loses nothing.
	ready := sse.Frame{Type: "ready", Retry: s.opts.Retry,
		Data: []byte(`{"channel":` + strconv.Quote(name) + `,"replay":` + strconv.FormatUint(replay, 10) + `}`)}
	if replay == 0 {
		ready.ID = c.id(head)
	}
	buf, _ := sse.AppendFrame(nil, ready)
	if !s.write(rc, w, buf) {
		return
	}
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	pending := replay > 0
	for {
		if pending {
			pending = false
			entries, lost := c.since(cursor)
			if lost > 0 {
				s.log.Warn("subscriber missed deliveries no longer buffered", "channel", name, "lost", lost)
				if !s.write(rc, w, sse.AppendComment(nil, strconv.FormatUint(lost, 10)+" deliveries were dropped from the replay buffer before they could be sent")) {
					return
				}
			}
			for _, e := range entries {
				if !s.writeEntry(rc, w, c, e) {
					return
				}
				cursor = e.seq
			}
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
	if _, err := io.WriteString(w, "id: "+c.id(e.seq)+"\ndata: "); err != nil {
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

// Shutdown closes s and then srv gracefully, in the order that lets open streams
// end: a helper for commands and tests that run a Server in an http.Server.
func Shutdown(ctx context.Context, srv *http.Server, s *Server) error {
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	err := srv.Shutdown(ctx)
	if err != nil {
		// Out of time: closing the connections ends the streams still stuck
		// writing to clients that stopped reading.
		srv.Close()
	}
	return errors.Join(err, <-closed)
}
