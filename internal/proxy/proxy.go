// Package proxy is a webhook channel server in the manner of smee: a delivery
// POSTed to a channel URL is sent, as a Server-Sent Event, to every client
// subscribed to that URL, so that a forge on the internet can reach a developer's
// machine that it cannot connect to, or so that the whole path runs on one
// machine.
//
// Routes:
//
//	GET|HEAD /new          307 to a new random channel URL
//	GET|HEAD /new?token=1  201: a new channel that needs a read token to subscribe
//	POST     /{channel}    fan a delivery out to the channel's subscribers
//	GET      /{channel}    with Accept: text/event-stream, subscribe; otherwise a page
//	GET      /             a page saying what this is
//
// A subscriber first gets a "ready" event, then one "message" event per delivery,
// whose data is a JSON object: the delivery's headers (lowercased names), "body"
// (the payload as JSON), "bodyB" (the exact body bytes, standard padded base64),
// "query" and "timestamp" (Unix milliseconds). Comments keep idle streams open.
//
// Channel names come from /new: they carry a tag, under the Server's key, that
// the proxy checks instead of keeping a list, and any other name is unknown
// (404) unless Options.AllowNamedChannels is set. A channel made with
// /new?token=1 answers a subscription only with its read token (query
// parameter "token", or "Authorization: Bearer"): posting needs no token, so
// the URL given to the forge does not let its holders read the deliveries.
//
// Beyond smee, every message has an event id, and each channel keeps a bounded
// replay buffer: a client that reconnects with a Last-Event-ID this proxy gave
// out for that channel gets what was sent while it was away. Any other id (made
// up, of another channel, of an earlier life of the channel) replays nothing.
// With a journal directory the buffers, and the key, are kept on disk too, so
// that a restarted proxy still knows its channels and replays them.
//
// Memory is bounded across channels: the bytes of all replay buffers
// (MaxBufferedBytes, the oldest deliveries go first), of deliveries being
// received (MaxPendingBytes, 503 with Retry-After past it) and of all journal
// files (MaxJournalBytes, by compaction, which writes from memory and needs
// none of its own).
package proxy

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"forgehooks.dev/forgehooks/internal/waitroom"
	"html"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// HeaderSubscribers is the header of a POST's answer that gives the number of
// subscribers the delivery was sent to live, so that a sender can warn when no
// one listens.
const HeaderSubscribers = "X-Channel-Subscribers"

// HeaderReadToken is the header of /new?token=1's answer that holds the new
// channel's read token.
const HeaderReadToken = "X-Read-Token"

// Defaults of Options.
const (
	DefaultMaxBodyBytes     = 25 << 20 // the forge's own limit for a delivery
	DefaultReplayEvents     = 100
	DefaultReplayBytes      = 64 << 20 // room for one message of a 25 MiB delivery
	DefaultReplayAge        = 24 * time.Hour
	DefaultMaxBufferedBytes = 128 << 20
	DefaultMaxPendingBytes  = 96 << 20
	DefaultMaxJournalBytes  = 256 << 20
	DefaultKeepAlive        = 30 * time.Second
	DefaultRetry            = 2 * time.Second
	DefaultWriteTimeout     = 2 * time.Minute
	DefaultReadTimeout      = 60 * time.Second
	// DefaultMinBodyRate is Options.MinBodyRate's default: 16 KiB/s.
	DefaultMinBodyRate = 16 << 10
	DefaultMaxChannels = 1000
)

// Options configure a Server. Zero values take the defaults above.
type Options struct {
	// MaxBodyBytes bounds a delivery's body; larger ones get 413.
	MaxBodyBytes int64
	// ReplayEvents, ReplayBytes and ReplayAge bound each channel's replay
	// buffer: the oldest deliveries are dropped beyond any of them (the
	// newest is kept whatever its size, until MaxBufferedBytes needs the
	// room). The bytes are those of the messages, about 2.4 times their
	// bodies.
	ReplayEvents int
	ReplayBytes  int64
	ReplayAge    time.Duration
	// MaxBufferedBytes bounds the replay buffers of all channels together:
	// past it, the oldest deliveries of any channel are dropped.
	MaxBufferedBytes int64
	// MaxPendingBytes bounds the memory of the deliveries being received at
	// once. A delivery is charged for the buffer its body has grown into as
	// its bytes arrive (at most four times the bytes received, until it
	// passes 1 MiB: then its whole announced length), not for what it
	// announces, and once read for five times its size (its message being
	// built). One channel holds at most half of the budget, so that posts to
	// other channels always find room; a delivery that does not fit waits up
	// to 5 s for room, then gets 503 with Retry-After. A delivery that needs
	// more than the whole budget is taken when no other is being received.
	MaxPendingBytes int64
	// MinBodyRate is the slowest a body may arrive, in bytes per second over
	// each 10 s window; a slower one is cut with 408 and its bytes given
	// back. Zero: DefaultMinBodyRate. Negative: no minimum.
	MinBodyRate int64
	// MaxJournalBytes bounds the journal files together: past it, the
	// journals that hold more than their buffers are rewritten. It must be
	// at least MaxBufferedBytes plus room for appending.
	MaxJournalBytes int64
	// AllowNamedChannels lets any valid name be a channel (such as
	// /my-channel), not only the names /new gives out.
	AllowNamedChannels bool
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
	// MaxChannels bounds the channels held at once. A new channel beyond it
	// takes the place of the one without subscribers that was idle longest
	// (its buffered deliveries are dropped); only when every channel has
	// subscribers does it get 503.
	MaxChannels int
	// JournalDir, when set, keeps the replay buffers in files there, so that
	// they survive a restart, and the key that makes channel names, read
	// tokens and event ids. It is created if needed.
	JournalDir string
	// Logger receives one line per delivery and per subscription; nil logs
	// nothing.
	Logger *slog.Logger
}

// Server serves channels. Create it with New; it is an http.Handler.
type Server struct {
	opts   Options
	lim    limits
	log    *slog.Logger
	key    []byte
	totals totals

	mu    sync.Mutex
	chans map[string]*channel

	pending *waitroom.Budget // bytes reserved by deliveries being received

	done      chan struct{}
	closeOnce sync.Once
	streams   sync.WaitGroup
}

// Stats are a Server's counts at one moment.
type Stats struct {
	// Channels is the number of channels held.
	Channels int
	// BufferedBytes is the bytes of the messages in all replay buffers.
	BufferedBytes int64
	// JournalBytes is the bytes of all journal files.
	JournalBytes int64
	// PendingBytes is the memory reserved by deliveries being received.
	PendingBytes int64
}

// Stats returns the Server's counts, which its bounds hold down.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	n := len(s.chans)
	s.mu.Unlock()
	p := s.pending.Used()
	return Stats{Channels: n, BufferedBytes: s.totals.buffered.Load(), JournalBytes: s.totals.journal.Load(), PendingBytes: p}
}

// New returns a Server. With Options.JournalDir, it loads the channels kept
// there, within the bounds of opts, and fails when the directory cannot be used
// or holds a damaged journal.
func New(opts Options) (*Server, error) {
	setDefault(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&opts.ReplayEvents, DefaultReplayEvents)
	setDefault(&opts.ReplayBytes, DefaultReplayBytes)
	setDefault(&opts.ReplayAge, DefaultReplayAge)
	setDefault(&opts.MaxBufferedBytes, DefaultMaxBufferedBytes)
	setDefault(&opts.MaxPendingBytes, DefaultMaxPendingBytes)
	setDefault(&opts.MinBodyRate, DefaultMinBodyRate)
	setDefault(&opts.MaxJournalBytes, max(DefaultMaxJournalBytes, 2*opts.MaxBufferedBytes))
	setDefault(&opts.KeepAlive, DefaultKeepAlive)
	setDefault(&opts.Retry, DefaultRetry)
	setDefault(&opts.WriteTimeout, DefaultWriteTimeout)
	setDefault(&opts.ReadTimeout, DefaultReadTimeout)
	setDefault(&opts.MaxChannels, DefaultMaxChannels)
	if opts.MaxJournalBytes < opts.MaxBufferedBytes+opts.MaxBufferedBytes/8 {
		return nil, fmt.Errorf("proxy: MaxJournalBytes (%d) must be at least MaxBufferedBytes (%d) and an eighth, room to append between compactions", opts.MaxJournalBytes, opts.MaxBufferedBytes)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:  opts,
		lim:   limits{events: opts.ReplayEvents, bytes: min(opts.ReplayBytes, opts.MaxBufferedBytes), age: opts.ReplayAge},
		log:   log,
		chans: map[string]*channel{},
		done:  make(chan struct{}),
	}
	s.pending = newBudget(opts.MaxPendingBytes)
	if opts.JournalDir == "" {
		s.key = newKey()
	} else {
		if err := os.MkdirAll(opts.JournalDir, 0o700); err != nil {
			return nil, fmt.Errorf("proxy: journal directory: %w", err)
		}
		key, err := loadKey(opts.JournalDir)
		if err != nil {
			return nil, err
		}
		s.key = key
		ld := &loader{now: time.Now(), lim: s.lim, maxRecord: maxMessageBytes(opts.MaxBodyBytes),
			maxBuffered: opts.MaxBufferedBytes, totals: &s.totals}
		chans, err := ld.loadJournals(opts.JournalDir)
		if err != nil {
			return nil, err
		}
		if ld.skipped > 0 {
			log.Warn("journal records over the size limit skipped", "records", ld.skipped, "limit", ld.maxRecord)
		}
		s.chans = chans
		for name, c := range chans {
			log.Info("channel restored from journal", "channel", name, "buffered", len(c.entries), "last_id", s.eventID(c, c.head))
		}
		s.mu.Lock()
		s.dropOverflowLocked()
		s.mu.Unlock()
	}
	go s.sweeper()
	return s, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// MemoryLimit returns a soft memory limit for a process that runs a Server
// with opts (zero values meaning the defaults), for runtime/debug.SetMemoryLimit:
// what its bounds let it hold live (the replay buffers and the deliveries
// being received) and 64 MiB for the rest. Under it the garbage collector
// works harder instead of letting the heap grow to twice what is live, which
// a flood of deliveries, each soon garbage, would otherwise make it do.
func MemoryLimit(opts Options) int64 {
	setDefault(&opts.MaxBufferedBytes, DefaultMaxBufferedBytes)
	setDefault(&opts.MaxPendingBytes, DefaultMaxPendingBytes)
	setDefault(&opts.MinBodyRate, DefaultMinBodyRate)
	setDefault(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	// A delivery over the pending budget is taken alone.
	pending := max(opts.MaxPendingBytes, pendingCost(opts.MaxBodyBytes))
	return opts.MaxBufferedBytes + pending + 64<<20
}

// maxMessageBytes bounds the message of a body of n bytes: the body (at most
// twice its size as a JSON string), its base64 and the headers (net/http's
// default header limit, each byte at most six as JSON).
func maxMessageBytes(n int64) int {
	return int(2*n + (n+2)/3*4 + 6<<20 + 1<<10)
}

// eventID returns the id of delivery seq of c.
func (s *Server) eventID(c *channel, seq uint64) string {
	return eventID(s.key, c.name, c.epoch, seq)
}

// NewChannelName returns a new channel name, as GET /new redirects to; with
// withToken, the channel answers subscriptions only with ReadToken's token.
func (s *Server) NewChannelName(withToken bool) string {
	return issueName(s.key, withToken)
}

// ReadToken returns the read token of a channel made with a token.
func (s *Server) ReadToken(name string) string { return readToken(s.key, name) }

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

// ServeHTTP routes a request; see the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		page(w, http.StatusOK, "forgehooks proxy", `<p>A webhook channel server. <a href="/new">Start a new channel</a>, or <a href="/new?token=1">one that needs a read token to subscribe</a>.</p>`)
	case p == "/new":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		withToken := r.URL.Query().Get("token") != ""
		name := s.NewChannelName(withToken)
		url := baseURL(r) + "/" + name
		if !withToken {
			http.Redirect(w, r, url, http.StatusTemporaryRedirect)
			return
		}
		tok := s.ReadToken(name)
		w.Header().Set("Location", url)
		w.Header().Set(HeaderReadToken, tok)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "channel: %s\nread token: %s\n\nGive the forge the channel URL. Subscribe with the token:\n  forgehooks relay --source '%s?token=%s' --target http://127.0.0.1:3000/api/forge/webhooks\n", url, tok, url, tok)
	default:
		name := p[1:]
		if !validChannel(name) {
			http.Error(w, "not a channel: a channel name is 1 to 64 letters, digits, '-' or '_'", http.StatusNotFound)
			return
		}
		issued, withToken := issuedName(s.key, name)
		if !issued && !s.opts.AllowNamedChannels {
			msg := "unknown channel: channel URLs come from /new"
			if s.opts.JournalDir == "" {
				msg += " (those of a proxy that ran before this one without a journal are gone: open /new again)"
			}
			http.Error(w, msg, http.StatusNotFound)
			return
		}
		switch r.Method {
		case http.MethodPost:
			s.post(w, r, name)
		case http.MethodGet, http.MethodHead:
			if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				if withToken && !s.tokenOK(r, name) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="forgehooks proxy channel"`)
					http.Error(w, "this channel needs its read token: add ?token=TOKEN to its URL, or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
					return
				}
				s.stream(w, r, name)
				return
			}
			url := html.EscapeString(baseURL(r) + "/" + name)
			source := url
			if withToken {
				source += "?token=TOKEN"
			}
			page(w, http.StatusOK, "forgehooks proxy channel "+name,
				"<p>Channel <code>"+url+"</code>. Enter it as the webhook URL on the forge, and receive its deliveries with:</p>"+
					"<pre>forgehooks relay --source '"+source+"' --target http://127.0.0.1:3000/api/forge/webhooks</pre>"+
					"<p>This page is not an event stream: clients must send <code>Accept: text/event-stream</code>.</p>")
		default:
			methodNotAllowed(w, "GET, HEAD, POST")
		}
	}
}

// tokenOK reports whether r carries name's read token.
func (s *Server) tokenOK(r *http.Request, name string) bool {
	got := r.URL.Query().Get("token")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = strings.TrimSpace(b)
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.ReadToken(name))) == 1
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
