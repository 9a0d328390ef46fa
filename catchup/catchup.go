package catchup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/internal/clip"
)

// DefaultAPIURL is the forge's REST API, the server of its published REST
// description.
const DefaultAPIURL = "https://api.github.com"

// Defaults of [Options].
const (
	// DefaultSince is how far back a run without a checkpoint looks.
	DefaultSince = 24 * time.Hour
	// LogRetention is how long the forge keeps a delivery log; older
	// deliveries cannot be redelivered.
	LogRetention = 72 * time.Hour
	// DefaultRedeliveriesPerMinute is the forge's secondary limit for
	// content-creating requests.
	DefaultRedeliveriesPerMinute = 80
	// DefaultMaxPages bounds the pages of the log read in one run: at 100
	// attempts a page, 100 000 attempts.
	DefaultMaxPages = 1000
	// DefaultMaxTries bounds the tries of one request.
	DefaultMaxTries = 6
	// DefaultMaxWait is the longest single wait a rate limit may impose
	// before the run gives up.
	DefaultMaxWait = 15 * time.Minute
	// Overlap is how far before its checkpoint a run starts reading, for
	// attempts logged late; guids seen twice are decided the same way.
	Overlap = 5 * time.Minute
	// perPage is the largest page the forge serves.
	perPage = 100
	// DefaultMaxEntries bounds the delivery ids one run keeps: the forge
	// keeps its log 3 days, and 100,000 deliveries is more than a hook
	// receives in that time but for the busiest.
	DefaultMaxEntries = 100_000
	// maxFieldBytes bounds a text field of an attempt that a run keeps
	// (status, event, action): longer ones are cut.
	maxFieldBytes = 256
)

// ErrLinkLoop is wrapped by the error of a run whose log pages lead back to a
// page already read.
var ErrLinkLoop = errors.New("the delivery log's next link leads back to a page already read")

// ErrRefused is wrapped by the error of a run in which the forge refused some
// redeliveries for good; the run went on with the others, and the checkpoint
// advanced (asking again would be refused again).
var ErrRefused = errors.New("the forge refused redeliveries")

// ErrPageCap is wrapped by the error of a run that read MaxPages pages without
// reaching its checkpoint.
var ErrPageCap = errors.New("page limit reached before the checkpoint")

// ErrEntryCap is wrapped by the error of a run that met more than
// MaxEntries delivery ids, or a page of more attempts than the 100 asked
// for: not a log the forge serves, and more than a run keeps.
var ErrEntryCap = errors.New("entry limit reached before the checkpoint")

// Holder tells whether the receiver already holds a delivery (a durable inbox
// does); such a delivery is not redelivered even if the forge logged it failed,
// e.g. when the receiver stored it but its answer was lost.
type Holder interface {
	// Holds reports whether the delivery with this id (X-Forge-Delivery, the
	// log's guid) is held.
	Holds(ctx context.Context, deliveryID string) (bool, error)
}

// Options configure [Run]. Hook and Credentials are required; every other
// zero value means the default documented on its field.
type Options struct {
	// APIURL is the REST API's base URL; default DefaultAPIURL.
	APIURL string
	// Hook is the hook whose log is read.
	Hook Hook
	// Credentials authorize every request: an *AppJWT for the app hook, a
	// Token for repository and organization hooks.
	Credentials Credentials
	// Since looks back this far from now. Zero: back to the checkpoint, or
	// DefaultSince without one. With a checkpoint older than now-Since, the
	// run still reads back to the checkpoint, so that nothing is skipped.
	Since time.Duration
	// Checkpoints keeps the checkpoint and the guids requested between runs.
	// Nil: none kept; every run looks back Since (or DefaultSince).
	Checkpoints Checkpoints
	// Holder, when set, is asked about each guid not delivered successfully.
	Holder Holder
	// DryRun decides and reports, but requests nothing and saves nothing.
	DryRun bool
	// RedeliveriesPerMinute paces redelivery requests; default
	// DefaultRedeliveriesPerMinute.
	RedeliveriesPerMinute int
	// MaxPages bounds the log pages read; default DefaultMaxPages.
	MaxPages int
	// MaxEntries bounds the delivery ids a run keeps (one Entry each; the
	// attempts themselves are not kept); default DefaultMaxEntries. A run
	// that meets more stops with an error wrapping ErrEntryCap, and a
	// warning, before requesting anything.
	MaxEntries int
	// MaxTries bounds the tries of one request (throttled or 5xx); default
	// DefaultMaxTries.
	MaxTries int
	// MaxWait is the longest single wait for a rate limit; default
	// DefaultMaxWait.
	MaxWait time.Duration
	// HTTPClient sends the requests; default a client with a 30 s timeout.
	HTTPClient *http.Client
	// Logger receives warnings and progress; default slog.Default().
	// Credentials never reach it.
	Logger *slog.Logger
	// Clock is the time source; default the real clock.
	Clock Clock
	// UserAgent is sent with each request (the forge requires one); default
	// "forgehooks-catchup".
	UserAgent string
}

// Decision is what a run decided for one guid.
type Decision string

// The decisions.
const (
	// Redeliver: no attempt succeeded and nothing holds it; its latest
	// attempt is (or, in a dry run, would be) redelivered.
	Redeliver Decision = "redeliver"
	// SkipSucceeded: an attempt was answered with a 2xx.
	SkipSucceeded Decision = "skip: succeeded"
	// SkipHeld: the Holder holds it.
	SkipHeld Decision = "skip: held"
	// SkipRequested: an earlier run requested its redelivery.
	SkipRequested Decision = "skip: requested earlier"
)

// Entry is one guid of the log window and its decision.
type Entry struct {
	// GUID is the delivery id.
	GUID string
	// Latest is the guid's newest attempt in the window.
	Latest Attempt
	// Attempts counts its attempts in the window.
	Attempts int
	// Decision is what the run decided.
	Decision Decision
	// Requested is set once the forge accepted the redelivery request.
	Requested bool
	// Refused is the forge's answer when it refused this redelivery for good
	// (400, 404, 410 or 422: e.g. an attempt too old to redeliver); the
	// guid is remembered as requested, and not asked for again.
	Refused string
}

// Report is what a run read, decided and did.
type Report struct {
	// Hook is the hook read.
	Hook Hook
	// From is the oldest log time read; Through the checkpoint after the run.
	From, Through time.Time
	// Pages and Attempts count what was read.
	Pages, Attempts int
	// Entries holds one entry per guid, oldest first.
	Entries []Entry
	// Requested counts the redelivery requests the forge accepted.
	Requested int
	// DryRun is set when nothing was requested or saved on purpose.
	DryRun bool
	// Warnings are conditions the caller should see (also logged).
	Warnings []string
}

// Count returns how many entries have decision d.
func (r Report) Count(d Decision) int {
	n := 0
	for _, e := range r.Entries {
		if e.Decision == d {
			n++
		}
	}
	return n
}

// Run reads the hook's delivery log back to the checkpoint (or opts.Since),
// decides per guid, requests the redeliveries, and advances the checkpoint.
//
// Nothing is requested unless the whole window was read and decided: a bad
// page, a link loop, the page limit, a 401 or 404 ends the run with an error
// and the checkpoint as it was. A redelivery request that fails (after its
// retries) ends the run too; the guids requested before it are saved, so that
// the next run does not request them again, and the checkpoint does not move.
// A redelivery the forge refuses for good (400, 404, 410, 422) is reported in
// its Entry and the run goes on; it then returns an error wrapping
// [ErrRefused]. The Report is filled as far as the run got, even with an
// error.
func Run(ctx context.Context, opts Options) (Report, error) {
	rep := Report{Hook: opts.Hook, DryRun: opts.DryRun}
	r, err := newRun(opts)
	if err != nil {
		return rep, err
	}
	state, err := r.loadState(ctx)
	if err != nil {
		return rep, err
	}
	now := r.clock.Now()
	rep.From = r.from(now, state)
	rep.Through = state.Through
	if gap := now.Sub(rep.From); gap > LogRetention {
		rep.warn(ctx, r.log, fmt.Sprintf("looking back %v, but the forge keeps its delivery log for %v: deliveries before %s cannot be redelivered", gap.Round(time.Minute), LogRetention, now.Add(-LogRetention).UTC().Format(time.RFC3339)))
	}
	w, pages, err := r.list(ctx, rep.From, nil)
	rep.Pages, rep.Attempts = pages, w.attempts
	if err != nil {
		if errors.Is(err, ErrEntryCap) || errors.Is(err, ErrPageCap) {
			rep.warn(ctx, r.log, "the run stopped at a bound, nothing was requested: "+err.Error())
		}
		return rep, fmt.Errorf("catchup: %s: reading the delivery log: %w", opts.Hook, err)
	}
	rep.Entries = w.sorted()
	if err := r.decide(ctx, rep.Entries, state); err != nil {
		return rep, fmt.Errorf("catchup: %s: %w", opts.Hook, err)
	}
	if opts.DryRun {
		return rep, nil
	}
	if state.Requested == nil {
		state.Requested = map[string]time.Time{}
	}
	next := time.Time{}
	var refused []string
	for i := range rep.Entries {
		e := &rep.Entries[i]
		if e.Decision != Redeliver {
			continue
		}
		if err := r.pace(ctx, &next); err != nil {
			return rep, fmt.Errorf("catchup: %s: %w", opts.Hook, err)
		}
		err := r.redeliver(ctx, e.Latest.ID)
		if err != nil && !refusal(err) {
			return rep, fmt.Errorf("catchup: %s: redelivering %s (attempt %d): %w; %d requested before it", opts.Hook, e.GUID, e.Latest.ID, err, rep.Requested)
		}
		if err != nil {
			e.Refused = err.Error()
			refused = append(refused, e.GUID)
			r.log.LogAttrs(ctx, slog.LevelWarn, "catchup: redelivery refused", slog.String("hook", opts.Hook.String()), slog.String("guid", e.GUID), slog.String("error", err.Error()))
		} else {
			e.Requested = true
			rep.Requested++
			r.log.LogAttrs(ctx, slog.LevelInfo, "catchup: redelivery requested", slog.String("hook", opts.Hook.String()), slog.String("guid", e.GUID), slog.String("event", e.Latest.Event), slog.Int64("attempt", e.Latest.ID))
		}
		state.Requested[e.GUID] = r.clock.Now().UTC()
		// saved at once: a crash must not lead to requesting it again
		if err := r.save(ctx, state); err != nil {
			return rep, err
		}
	}
	if w.latest.After(state.Through) {
		state.Through = w.latest.UTC()
	}
	for guid, at := range state.Requested {
		if now.Sub(at) > LogRetention+Overlap+time.Hour {
			delete(state.Requested, guid) // gone from the forge's log too
		}
	}
	rep.Through = state.Through
	if err := r.save(ctx, state); err != nil {
		return rep, err
	}
	if len(refused) > 0 {
		return rep, fmt.Errorf("catchup: %s: %w: %d of %d (%s); the others were requested", opts.Hook, ErrRefused, len(refused), len(refused)+rep.Requested, strings.Join(refused, ", "))
	}
	return rep, nil
}

// isLoopback tells a host that names this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// refusal tells a final answer about one attempt from one that concerns every
// request (401, 403) and must end the run.
func refusal(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

func (rep *Report) warn(ctx context.Context, log *slog.Logger, msg string) {
	rep.Warnings = append(rep.Warnings, msg)
	log.LogAttrs(ctx, slog.LevelWarn, "catchup: "+msg, slog.String("hook", rep.Hook.String()))
}

// run is one Run's settings, defaults applied.
type run struct {
	opts   Options
	c      *client
	clock  Clock
	log    *slog.Logger
	hook   string // the hook's URL, without query
	perMin int
}

func newRun(opts Options) (*run, error) {
	if err := opts.Hook.validate(); err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	if opts.Credentials == nil {
		return nil, errors.New("catchup: no credentials: an app JWT for the app hook, a token for other hooks")
	}
	base, err := url.Parse(cmp.Or(opts.APIURL, DefaultAPIURL))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("catchup: API URL %q: want http(s)://host[/path]", opts.APIURL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawQuery, base.Fragment = "", ""
	r := &run{opts: opts, clock: opts.Clock, log: opts.Logger, perMin: cmp.Or(opts.RedeliveriesPerMinute, DefaultRedeliveriesPerMinute)}
	if r.clock == nil {
		r.clock = realClock{}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.perMin < 0 {
		return nil, errors.New("catchup: RedeliveriesPerMinute must be positive")
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	r.c = &client{
		base: base, http: hc, creds: opts.Credentials, clock: r.clock, log: r.log,
		maxTries:  max(cmp.Or(opts.MaxTries, DefaultMaxTries), 1),
		maxWait:   cmp.Or(opts.MaxWait, DefaultMaxWait),
		userAgent: cmp.Or(opts.UserAgent, "forgehooks-catchup"),
	}
	r.hook = base.String() + opts.Hook.path()
	if base.Scheme == "http" && !isLoopback(base.Hostname()) {
		r.log.Warn("catchup: the API URL is plain http: credentials travel unencrypted", slog.String("api", base.Host))
	}
	return r, nil
}

func (r *run) loadState(ctx context.Context) (State, error) {
	if r.opts.Checkpoints == nil {
		return State{}, nil
	}
	s, err := r.opts.Checkpoints.Load(ctx, r.opts.Hook.Key())
	if err != nil {
		return State{}, fmt.Errorf("catchup: %s: loading the checkpoint: %w", r.opts.Hook, err)
	}
	return cloneState(s), nil
}

func (r *run) save(ctx context.Context, s State) error {
	if r.opts.Checkpoints == nil {
		return nil
	}
	if err := r.opts.Checkpoints.Save(ctx, r.opts.Hook.Key(), s); err != nil {
		return fmt.Errorf("catchup: %s: saving the checkpoint: %w", r.opts.Hook, err)
	}
	return nil
}

// from is the oldest log time the run reads.
func (r *run) from(now time.Time, s State) time.Time {
	var from time.Time
	switch {
	case r.opts.Since > 0:
		from = now.Add(-r.opts.Since)
	case s.Through.IsZero():
		from = now.Add(-DefaultSince)
	}
	if !s.Through.IsZero() {
		if cp := s.Through.Add(-Overlap); from.IsZero() || cp.Before(from) {
			from = cp
		}
	}
	return from
}

// list reads the log newest first until an attempt older than from, the last
// page, an attempt for which stop (when set) is true (then the window's last
// attempt), or an error. It keeps one Entry per guid, never the attempts.
func (r *run) list(ctx context.Context, from time.Time, stop func(Attempt) bool) (w *window, pages int, err error) {
	maxPages := cmp.Or(r.opts.MaxPages, DefaultMaxPages)
	w = &window{max: cmp.Or(r.opts.MaxEntries, DefaultMaxEntries), byGUID: map[string]int{}}
	next := r.hook + "/deliveries?per_page=" + strconv.Itoa(perPage)
	read := map[string]bool{}
	ids := map[int64]bool{}
	for next != "" {
		if pages >= maxPages {
			return w, pages, fmt.Errorf("%w: read %d pages (MaxPages) and the log goes on; look back less far (Since) or allow more pages", ErrPageCap, maxPages)
		}
		if read[next] {
			return w, pages, fmt.Errorf("%w (page %d)", ErrLinkLoop, pages+1)
		}
		read[next] = true
		res, err := r.c.do(ctx, http.MethodGet, next)
		if err != nil {
			return w, pages, err
		}
		pages++
		page, err := decodePage(res.body, perPage)
		res.body = nil // the page's bytes are not kept
		if err != nil {
			return w, pages, fmt.Errorf("page %d: %w", pages, err)
		}
		fresh, done := 0, false
		for _, a := range page {
			if ids[a.ID] {
				continue
			}
			ids[a.ID] = true
			fresh++
			if a.DeliveredAt.Before(from) {
				done = true // newest first: the rest is older still
				continue
			}
			if !w.add(a) {
				return w, pages, fmt.Errorf("%w: more than %d delivery ids (MaxEntries) by page %d; look back less far (Since) or allow more entries", ErrEntryCap, w.max, pages)
			}
			if stop != nil && stop(a) {
				w.last = a
				return w, pages, nil
			}
		}
		if len(page) > 0 && fresh == 0 {
			return w, pages, fmt.Errorf("page %d repeats attempts already read: the log's cursor does not advance", pages)
		}
		if done {
			break
		}
		links, err := parseLink(res.header.Get("Link"))
		if err != nil {
			return w, pages, fmt.Errorf("page %d: %w", pages, err)
		}
		next = ""
		if n := links["next"]; n != "" {
			if next, err = r.sameOrigin(n); err != nil {
				return w, pages, fmt.Errorf("page %d: %w", pages, err)
			}
		}
	}
	return w, pages, nil
}

// window is what a run keeps of the log it read: one Entry per guid.
type window struct {
	max      int
	entries  []Entry
	byGUID   map[string]int
	attempts int       // attempts read in the window
	latest   time.Time // the newest attempt's time
	last     Attempt   // the attempt list stopped at
}

// add counts a, into its guid's Entry; false when a new guid would pass max.
func (w *window) add(a Attempt) bool {
	i, ok := w.byGUID[a.GUID]
	if !ok {
		if len(w.entries) >= w.max {
			return false
		}
		w.byGUID[a.GUID] = len(w.entries)
		w.entries = append(w.entries, Entry{GUID: a.GUID, Latest: a})
		i = len(w.entries) - 1
	} else if later(a, w.entries[i].Latest) {
		w.entries[i].Latest = a
	}
	e := &w.entries[i]
	e.Attempts++
	if a.Succeeded() {
		e.Decision = SkipSucceeded
	}
	w.attempts++
	if a.DeliveredAt.After(w.latest) {
		w.latest = a.DeliveredAt
	}
	return true
}

// sorted returns the entries, oldest guid first (by latest attempt).
func (w *window) sorted() []Entry {
	slices.SortStableFunc(w.entries, func(x, y Entry) int {
		return cmp.Or(x.Latest.DeliveredAt.Compare(y.Latest.DeliveredAt), cmp.Compare(x.Latest.ID, y.Latest.ID))
	})
	return w.entries
}

// decodePage decodes one page of the log, as decodeAttempts does, one item at
// a time: a page of more than maxItems attempts (the forge serves the 100
// asked for) is refused as soon as it passes them (ErrEntryCap), and text
// fields are cut to maxFieldBytes, so that what a page costs is bounded
// whatever its size.
func decodePage(body []byte, maxItems int) ([]Attempt, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, fmt.Errorf("%w: delivery list is not a JSON array: %q", errMalformed, clip.String(string(bytes.TrimSpace(body))))
	}
	var out []Attempt
	for i := 0; dec.More(); i++ {
		if i >= maxItems {
			return nil, fmt.Errorf("%w: the page holds more than the %d attempts asked for", ErrEntryCap, maxItems)
		}
		var w *wireAttempt
		if err := dec.Decode(&w); err != nil {
			return nil, fmt.Errorf("%w: delivery list: %v", errMalformed, jsonError(err))
		}
		a, err := w.attempt()
		if err != nil {
			return nil, fmt.Errorf("%w: delivery list item %d: %v", errMalformed, i, err)
		}
		a.Status, a.Event, a.Action = cut(a.Status), cut(a.Event), cut(a.Action)
		out = append(out, a)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: delivery list: %v", errMalformed, jsonError(err))
	}
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("%w: delivery list: data after the array", errMalformed)
	}
	return out, nil
}

// jsonError words a truncated page as json.Unmarshal does.
func jsonError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("unexpected end of JSON input")
	}
	return err
}

// cut shortens a text field to maxFieldBytes, at a rune boundary.
func cut(s string) string {
	if len(s) <= maxFieldBytes {
		return s
	}
	n := maxFieldBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// sameOrigin resolves a next link and refuses one on another host: the
// credentials must not be sent anywhere else.
func (r *run) sameOrigin(link string) (string, error) {
	u, err := r.c.base.Parse(link)
	if err != nil {
		return "", fmt.Errorf("next link: %w", err)
	}
	if u.Scheme != r.c.base.Scheme || u.Host != r.c.base.Host {
		return "", fmt.Errorf("next link leads to %s://%s, not the API at %s://%s", u.Scheme, u.Host, r.c.base.Scheme, r.c.base.Host)
	}
	return u.String(), nil
}

// later orders attempts by time, then id (ids grow; times have seconds only).
func later(a, b Attempt) bool {
	if c := a.DeliveredAt.Compare(b.DeliveredAt); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}

// decide sets the decision of every entry not already skipped as succeeded.
func (r *run) decide(ctx context.Context, entries []Entry, s State) error {
	for i := range entries {
		e := &entries[i]
		if e.Decision == SkipSucceeded {
			continue
		}
		if _, ok := s.Requested[e.GUID]; ok {
			e.Decision = SkipRequested
			continue
		}
		if r.opts.Holder != nil {
			held, err := r.opts.Holder.Holds(ctx, e.GUID)
			if err != nil {
				return fmt.Errorf("asking whether %s is held: %w", e.GUID, err)
			}
			if held {
				e.Decision = SkipHeld
				continue
			}
		}
		e.Decision = Redeliver
	}
	return nil
}

// pace waits until the next redelivery request is allowed.
func (r *run) pace(ctx context.Context, next *time.Time) error {
	now := r.clock.Now()
	if d := next.Sub(now); d > 0 {
		if err := r.clock.Sleep(ctx, d); err != nil {
			return err
		}
		now = r.clock.Now()
	}
	*next = now.Add(time.Minute / time.Duration(r.perMin))
	return nil
}

// redeliver asks the forge to redeliver attempt id.
func (r *run) redeliver(ctx context.Context, id int64) error {
	_, err := r.c.do(ctx, http.MethodPost, r.hook+"/deliveries/"+strconv.FormatInt(id, 10)+"/attempts")
	return err
}
