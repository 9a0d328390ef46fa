// Package relay reads deliveries from a webhook channel (a smee-style proxy's
// Server-Sent Events stream) and hands each one, with its exact body, to a
// handler: one that verifies and dispatches in-process, or Forward, which
// re-POSTs it to a local URL.
//
// A connection that drops is reopened with Last-Event-ID, after a delay that
// starts at the stream's "retry" value and doubles on each failure up to a cap;
// a proxy that keeps a replay buffer (forgehooks proxy does) then sends what was
// missed. Answers that will not get better by retrying (a page that is not an
// event stream, a 4xx) end Run with an error saying what is wrong.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/internal/sse"
)

// Defaults of Options.
const (
	DefaultRetry       = time.Second
	DefaultMaxBackoff  = 30 * time.Second
	DefaultIdleTimeout = 90 * time.Second // three of forgehooks proxy's keep-alives
)

// ErrNotEventStream is matched (with errors.Is) by Run's error when the source
// answers with something other than an event stream, such as a web page.
var ErrNotEventStream = errors.New("relay: source is not an event stream")

// ErrRejected is matched (with errors.Is) by Run's error when the source answers
// with a status that retrying will not change (4xx other than 408 and 429, or
// 204, by which a server says "stop").
var ErrRejected = errors.New("relay: source refused the subscription")

// Handler handles one delivery. Its error is logged; the relay goes on.
type Handler func(ctx context.Context, m *Message) error

// Options configure Run.
type Options struct {
	// Source is the channel URL.
	Source string
	// Handle is called for each delivery, one at a time, in order.
	Handle Handler
	// Client makes the stream requests; nil uses a client without timeout
	// (a stream is long-lived; IdleTimeout catches a dead one).
	Client *http.Client
	// ReadToken, when set, is sent as "Authorization: Bearer" (the read token
	// of a forgehooks proxy channel made with /new?token=1).
	ReadToken string
	// LastEventID, when set, is sent on the first connection too.
	LastEventID string
	// MaxEventBytes bounds one event; a larger one is skipped with an error
	// in the log. Zero: sse.DefaultMaxEventBytes. Negative: no bound.
	MaxEventBytes int
	// Retry is the first reconnection delay until the stream sets one.
	// Zero or negative: DefaultRetry (a delay, not a bound).
	Retry time.Duration
	// MaxBackoff caps the reconnection delay (a "retry" above it still wins).
	// Zero: DefaultMaxBackoff. Negative: no bound.
	MaxBackoff time.Duration
	// IdleTimeout: a stream that sends nothing, not even a keep-alive, for
	// this long is taken as dead and reopened. Zero: DefaultIdleTimeout.
	// Negative: no bound (a stream is never taken as dead).
	IdleTimeout time.Duration
	// Logger gets connection events and skipped messages. Nil:
	// slog.Default().
	Logger *slog.Logger
	// OnConnect, when set, is called each time a stream opens.
	OnConnect func()
	// Checkpoint, when set, is called with the stream's last event id each
	// time it changes, once the event that carried it was dealt with (for a
	// delivery: after Handle returned), so that the caller can keep it and
	// start a later Run with it as LastEventID. It runs on Run's goroutine.
	Checkpoint func(lastEventID string)

	// wait sleeps d before a reconnection, returning false when ctx ends
	// first; tests replace it to see the delays and to hold the relay away.
	wait func(ctx context.Context, d time.Duration) bool
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Run relays until ctx is done (it then returns nil) or the source answers in
// a way retrying will not change (it then returns an error matching
// ErrNotEventStream or ErrRejected).
func Run(ctx context.Context, opts Options) error {
	if opts.Handle == nil {
		return errors.New("relay: no handler")
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	opts.MaxBackoff = bound.Value(opts.MaxBackoff, DefaultMaxBackoff, math.MaxInt64/2) // Backoff doubles below it
	opts.IdleTimeout = bound.Value(opts.IdleTimeout, DefaultIdleTimeout, math.MaxInt64)
	if opts.wait == nil {
		opts.wait = sleep
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	st := &state{lastID: opts.LastEventID, saved: opts.LastEventID, retry: opts.Retry}
	failures := 0
	for {
		productive, err := connect(ctx, opts, log, st)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrNotEventStream) || errors.Is(err, ErrRejected) {
			return err
		}
		if productive {
			failures = 0
		}
		delay := Backoff(failures, st.retry, opts.MaxBackoff, rand.Float64())
		failures++
		log.Warn("stream lost; reconnecting", "source", RedactURL(opts.Source), "err", err, "in", delay.Round(time.Millisecond), "last_event_id", st.lastID)
		if !opts.wait(ctx, delay) {
			return nil
		}
	}
}

// Backoff returns the delay before reconnection attempt n (0 for the first after
// a connection that worked): retry doubled n times, capped at maxDelay (or at retry
// when that is larger, since the server asked for it), then jittered down by up
// to half with u in [0, 1), so that many clients do not come back at once.
func Backoff(n int, retry, maxDelay time.Duration, u float64) time.Duration {
	limit := max(maxDelay, retry)
	d := retry
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d - time.Duration(float64(d/2)*u)
}

// state is what survives from one connection to the next.
type state struct {
	lastID string
	saved  string // the last id given to Checkpoint
	retry  time.Duration
}

// checkpoint gives Checkpoint the last id when it changed.
func (st *state) checkpoint(opts Options) {
	if opts.Checkpoint != nil && st.lastID != st.saved {
		st.saved = st.lastID
		opts.Checkpoint(st.lastID)
	}
}

// connect opens the stream once and reads it until it ends. productive reports
// whether the stream opened and gave at least one event, so that the backoff
// starts again from its smallest delay.
func connect(ctx context.Context, opts Options, log *slog.Logger, st *state) (productive bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opts.Source, nil)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrRejected, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if opts.ReadToken != "" {
		req.Header.Set("Authorization", "Bearer "+opts.ReadToken)
	}
	src := RedactURL(opts.Source)
	if st.lastID != "" {
		req.Header.Set("Last-Event-ID", st.lastID)
	}
	// The watchdog cancels the request when nothing arrives for IdleTimeout:
	// no answer at all, or a stream gone silent.
	var idle atomic.Bool
	dog := time.AfterFunc(opts.IdleTimeout, func() { idle.Store(true); cancel() })
	defer dog.Stop()
	resp, err := opts.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = src
		}
		if idle.Load() {
			err = fmt.Errorf("no answer from %s within %v", src, opts.IdleTimeout)
		}
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized:
		return false, fmt.Errorf("%w: %s answered %s: the channel needs its read token (--read-token, or ?token= in --source), and the one given, if any, is not it", ErrRejected, src, resp.Status)
	case resp.StatusCode == http.StatusNoContent,
		resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		return false, fmt.Errorf("%w: %s answered %s%s: check that --source is a channel URL", ErrRejected, src, resp.Status, answerText(resp.Body))
	default:
		return false, fmt.Errorf("%s answered %s", src, resp.Status)
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt != "text/event-stream" {
		return false, fmt.Errorf("%w: %s answered %q, not text/event-stream: --source must be a channel's URL, such as http://127.0.0.1:3001/<channel> (open /new on the proxy to make one), not a web page",
			ErrNotEventStream, src, ct)
	}
	if opts.OnConnect != nil {
		opts.OnConnect()
	}

	body := &watchdogReader{r: resp.Body, dog: dog, d: opts.IdleTimeout}
	rd := sse.NewReader(body, sse.Options{MaxEventBytes: opts.MaxEventBytes, LastEventID: st.lastID})
	for {
		st.checkpoint(opts)
		ev, err := rd.Next()
		st.lastID = rd.LastEventID()
		if r, ok := rd.Retry(); ok {
			st.retry = r
		}
		var tooLarge *sse.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			productive = true
			log.Error("event skipped: larger than the relay's limit (--max-event-bytes)", "err", err)
			continue
		case err != nil:
			if idle.Load() {
				err = fmt.Errorf("nothing received for %v, not even a keep-alive", opts.IdleTimeout)
			} else if err == io.EOF {
				err = errors.New("the source closed the stream")
			}
			return productive, err
		}
		productive = true
		switch ev.Type {
		case "message":
		case "ready":
			log.Info("connected", "source", src, "last_event_id", st.lastID)
			continue
		default:
			// Keep-alive events ("ping") and others are not deliveries.
			log.Debug("event ignored", "type", ev.Type)
			continue
		}
		m, err := ParseMessage(ev.Data)
		if err != nil {
			log.Warn("message skipped", "id", ev.LastEventID, "err", err)
			continue
		}
		m.EventID = ev.LastEventID
		// The stream is not read while the handler runs: the watchdog waits.
		dog.Stop()
		if err := opts.Handle(ctx, m); err != nil && ctx.Err() == nil {
			log.Debug("handler failed", "id", m.EventID, "err", err)
		}
		if ctx.Err() != nil {
			// Stopped while handling: the delivery may not be done, so its
			// id is not checkpointed.
			return productive, ctx.Err()
		}
		dog.Reset(opts.IdleTimeout)
	}
}

// answerText returns the start of an error answer's text, as " (text)", for
// the error that ends Run: the source's own words say best what is wrong (such
// as a channel the proxy does not know).
func answerText(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 200))
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, line))
	if line == "" {
		return ""
	}
	return " (" + line + ")"
}

// RedactURL returns u with the value of its "token" query parameter replaced
// by "REDACTED", for logs and errors: a channel's read token is a secret.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		if before, _, ok := strings.Cut(u, "?"); ok {
			return before + "?REDACTED" // cannot tell which part is the token
		}
		return u
	}
	q := p.Query()
	if !q.Has("token") {
		return u
	}
	q.Set("token", "REDACTED")
	p.RawQuery = q.Encode()
	return p.String()
}

// watchdogReader pushes the watchdog's deadline back on every read that returns
// bytes.
type watchdogReader struct {
	r   io.Reader
	dog *time.Timer
	d   time.Duration
}

func (w *watchdogReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.dog.Reset(w.d)
	}
	return n, err
}
