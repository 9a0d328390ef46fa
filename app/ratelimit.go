package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrRateLimited is wrapped by the error of a request that would have to wait
// for its installation's rate limit longer than Options.MaxWait, or that was
// still throttled after Options.MaxRetries retries.
var ErrRateLimited = errors.New("rate limited")

// RateLimitError is the error of a request given up for a rate limit.
type RateLimitError struct {
	Method, Path string        // the request (the path without its query)
	Installation int64         // 0 for a request as the app or with a tenant's token
	Tenant       string        // whose token the request carried; "" for the app's credentials
	Wait         time.Duration // how long the forge asked to wait still
	Reason       string        // "Retry-After", "X-RateLimit-Reset", "secondary limit"
	MaxWait      time.Duration // the bound it went over
	Retries      int           // the retries made
}

// Error says which request, for whom, and how long the forge asked to wait.
func (e *RateLimitError) Error() string {
	who := "the app"
	switch {
	case e.Installation != 0:
		who = "installation " + strconv.FormatInt(e.Installation, 10)
	case e.Tenant != "":
		who = "tenant " + e.Tenant + "'s token"
	}
	if e.Wait <= e.MaxWait {
		return fmt.Sprintf("app: %s %s: %s still rate limited (%s) after %d retries", e.Method, e.Path, who, e.Reason, e.Retries)
	}
	return fmt.Sprintf("app: %s %s: %s is rate limited (%s) for %v more, longer than MaxWait %v", e.Method, e.Path, who, e.Reason, e.Wait.Round(time.Second), e.MaxWait)
}

// Unwrap returns ErrRateLimited.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// MaxServerWait caps every wait the forge's headers ask for (Retry-After, an
// X-RateLimit-Reset): the forge's own limits reset within the hour, so a
// longer wait is a broken or hostile answer, and must not switch the client
// off until a restart.
const MaxServerWait = time.Hour

// parseRetryAfter reads Retry-After: delay seconds, or an HTTP date (a date in
// the past is no delay). ok is false when v is absent or malformed.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, int64(MaxServerWait/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxServerWait), true
	}
	return 0, false
}

// parseRateLimit reads X-RateLimit-Remaining (-1 when absent or malformed)
// and X-RateLimit-Reset (Unix seconds; zero when absent or malformed).
func parseRateLimit(h http.Header) (remaining int64, reset time.Time) {
	remaining = -1
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Remaining")), 10, 64); err == nil && v >= 0 {
		remaining = v
	}
	// Up to year 9999, so that time.Unix stays meaningful.
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil && v > 0 && v < 253402300800 {
		reset = time.Unix(v, 0)
	}
	return remaining, reset
}

// throttle is what a response says about the rate limit.
type throttle struct {
	limited bool          // this request was refused for a rate limit
	wait    time.Duration // how long the installation must pause, at most MaxServerWait
	reason  string
	// primary says the wait is that of the primary limit of resource (the
	// response's X-RateLimit-Resource, "" when it names none): only that
	// resource's requests pause. Otherwise (Retry-After, a secondary limit)
	// every request of the installation does.
	primary  bool
	resource string
}

// untilReset is the wait until reset, at least floor and at most
// MaxServerWait.
func untilReset(reset, now time.Time, floor time.Duration) time.Duration {
	return min(max(reset.Sub(now), floor), MaxServerWait)
}

// secondaryDefault is the pause after a secondary limit that gives no delay:
// the forge asks for at least a minute.
const secondaryDefault = time.Minute

// maxPeek bounds how much of a 403's body is read to tell a rate limit from a
// refusal.
const maxPeek = 64 << 10

// classify reads a response's rate-limit headers (and, for a 403 that has
// none, its message). It leaves res.Body readable from the start.
func classify(res *http.Response, now time.Time) throttle {
	remaining, reset := parseRateLimit(res.Header)
	ra, hasRA := parseRetryAfter(res.Header.Get("Retry-After"), now)
	code := res.StatusCode
	var t throttle
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusForbidden && (hasRA || remaining == 0 || peekRateLimitMessage(res)):
		t.limited = true
		switch {
		case hasRA:
			t.wait, t.reason = ra, "Retry-After"
		case remaining == 0 && !reset.IsZero():
			t.wait, t.reason, t.primary = untilReset(reset, now, time.Second), "X-RateLimit-Reset", true
		default:
			t.wait, t.reason = secondaryDefault, "secondary limit"
		}
		// At least a second, so that "Retry-After: 0" cannot make a spin.
		t.wait = max(t.wait, time.Second)
	case remaining == 0 && !reset.IsZero():
		// Served, but the next request would be refused.
		t.wait, t.reason, t.primary = untilReset(reset, now, 0), "X-RateLimit-Remaining: 0", true
	}
	if t.primary {
		t.resource = rateResource(res.Header.Get("X-RateLimit-Resource"))
	}
	return t
}

// rateResource returns the X-RateLimit-Resource value when it names one of
// the resources resourceOf tells apart, "" otherwise: a request waits only on
// the budgets of its own resource, and a hostile header cannot grow the
// budgets without bound.
func rateResource(v string) string {
	switch v {
	case "core", "search", "code_search", "graphql":
		return v
	}
	return ""
}

// resourceOf is the rate-limit resource a request to path (relative to the
// API's base path) counts against, as the forge splits its primary limits.
func resourceOf(path string) string {
	switch {
	case path == "/search/code" || strings.HasPrefix(path, "/search/code/"):
		return "code_search"
	case strings.HasPrefix(path, "/search/"):
		return "search"
	case path == "/graphql":
		return "graphql"
	}
	return "core"
}

// peekRateLimitMessage reports whether a 403's body says "rate limit", and
// puts back what it read.
func peekRateLimitMessage(res *http.Response) bool {
	if res.Body == nil || res.Body == http.NoBody {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(res.Body, maxPeek))
	res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(head), res.Body), Closer: res.Body}
	return err == nil && bytes.Contains(bytes.ToLower(head), []byte("rate limit"))
}

type replayBody struct {
	io.Reader
	io.Closer
}

// budget is one installation's (or the app's) rate-limit state, shared by
// every request made for it: after a refusal or an exhausted limit, no
// request of that installation is sent until resume.
type budget struct {
	mu     sync.Mutex
	resume time.Time
	reason string
}

// pause holds back the installation's requests until at least until.
func (b *budget) pause(until time.Time, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until.After(b.resume) {
		b.resume, b.reason = until, reason
	}
}

// until returns how long b still pauses requests at now, and why.
func (b *budget) until(now time.Time) (time.Duration, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resume.Sub(now), b.reason
}

// waitBudgets blocks until none of bs pauses the request, unless that would
// make the request's total wait (*waited) exceed maxWait: then it returns the
// wait still needed and its reason, with ErrRateLimited. A pause extended
// while it slept is waited for too.
func waitBudgets(ctx context.Context, bs []*budget, clock Clock, waited *time.Duration, maxWait time.Duration, log func(time.Duration, string)) (time.Duration, string, error) {
	for {
		now := clock.Now()
		var d time.Duration
		var reason string
		for _, b := range bs {
			if bd, br := b.until(now); bd > d {
				d, reason = bd, br
			}
		}
		if d <= 0 {
			return 0, "", nil
		}
		if *waited+d > maxWait {
			return d, reason, ErrRateLimited
		}
		log(d, reason)
		*waited += d
		if err := clock.Sleep(ctx, d); err != nil {
			return 0, "", err
		}
	}
}
