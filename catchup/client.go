package catchup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/internal/clock"
)

// Clock is the time a run reads and waits on. The zero Options use the real
// clock; tests pass a virtual one so that minutes of backoff take no time. It
// is app.Clock: one virtual clock serves both packages.
type Clock = app.Clock

type realClock = clock.Real

// ErrGaveUp is wrapped by the error of a request that was throttled or failed
// transiently on every try, or that the forge asked to delay longer than
// Options.MaxWait.
var ErrGaveUp = errors.New("gave up")

// APIError is an answer of the forge that retrying cannot change (400, 401,
// 403 other than a rate limit, 404, 422, …).
type APIError struct {
	Method     string
	Path       string // without the query
	StatusCode int    // 0 when the request could not be sent (e.g. no credentials)
	Message    string // the forge's "message", if any
}

// Error says what failed and, for 401 and 404, what to check.
func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode == 0 { // refused before sending
		msg = e.Method + " " + e.Path
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		msg += " (check the app id and private key, or the token)"
	case http.StatusNotFound:
		msg += " (check the hook id, owner, repository or organization, and that the credentials may see that hook)"
	}
	return msg
}

// maxBody bounds a response body read: a page of 100 delivery items is about
// 40 KB.
const maxBody = 8 << 20

// Backoff for transient failures, and for a secondary rate limit the forge
// gives no delay for (it asks for at least a minute).
const (
	backoff5xx       = time.Second
	backoff5xxMax    = time.Minute
	backoffSecondary = time.Minute
)

// client makes the REST requests of one run: authorization, rate limits and
// retries.
type client struct {
	base      *url.URL
	http      *http.Client
	creds     Credentials
	clock     Clock
	log       *slog.Logger
	maxTries  int
	maxWait   time.Duration
	userAgent string

	// resumeAt is when the forge's primary rate limit resets, after it said
	// X-RateLimit-Remaining: 0; no request is sent before.
	resumeAt time.Time
}

// response is a successful answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends method rawURL until it succeeds, fails for good, or runs out of tries.
func (c *client) do(ctx context.Context, method, rawURL string) (*response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	what := method + " " + u.Path
	var last error
	for try := 1; try <= c.maxTries; try++ {
		if wait := c.resumeAt.Sub(c.clock.Now()); wait > 0 {
			if err := c.wait(ctx, what, wait, "primary rate limit exhausted"); err != nil {
				return nil, err
			}
		}
		resp, wait, err := c.once(ctx, method, u, try)
		if err == nil {
			return resp, nil
		}
		var perm *APIError
		if errors.As(err, &perm) || ctx.Err() != nil {
			return nil, err
		}
		last = err
		if try == c.maxTries {
			break
		}
		// at least a second, so that a "Retry-After: 0" cannot make a spin
		if err := c.wait(ctx, what, max(wait, time.Second), err.Error()); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: %w after %d tries: %v", what, ErrGaveUp, c.maxTries, last)
}

// wait sleeps d before the next try, unless d is longer than the caller allows.
func (c *client) wait(ctx context.Context, what string, d time.Duration, why string) error {
	if d > c.maxWait {
		return fmt.Errorf("%s: %w: the forge asks to wait %v (%s), more than the %v allowed", what, ErrGaveUp, d, why, c.maxWait)
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "catchup: waiting before the next request", slog.String("request", what), slog.Duration("wait", d), slog.String("reason", why))
	if err := c.clock.Sleep(ctx, d); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// once sends one request. A retryable failure is returned with the delay to
// wait before the next try; a final one as an *APIError.
func (c *client) once(ctx context.Context, method string, u *url.URL, try int) (*response, time.Duration, error) {
	now := c.clock.Now()
	auth, err := c.creds.Authorization(ctx, now)
	if err != nil {
		return nil, 0, &APIError{Method: method, Path: u.Path, Message: "credentials: " + err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, 0, &APIError{Method: method, Path: u.Path, Message: err.Error()}
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, expBackoff(backoff5xx, backoff5xxMax, try), fmt.Errorf("%s %s: %w", method, u.Path, unwrapURLError(err))
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	res.Body.Close()
	if err != nil {
		return nil, expBackoff(backoff5xx, backoff5xxMax, try), fmt.Errorf("%s %s: reading the answer: %w", method, u.Path, err)
	}
	if len(body) > maxBody {
		return nil, 0, &APIError{Method: method, Path: u.Path, StatusCode: res.StatusCode, Message: fmt.Sprintf("answer over %d bytes", maxBody)}
	}
	remaining, reset := rateHeaders(res.Header)
	if remaining == 0 && !reset.IsZero() {
		c.resumeAt = reset
	}
	retryAfter, hasRetryAfter := parseRetryAfter(res.Header.Get("Retry-After"), c.clock.Now())
	switch code := res.StatusCode; {
	case code >= 200 && code <= 299:
		return &response{status: code, header: res.Header, body: body}, 0, nil
	case code == http.StatusTooManyRequests || code == http.StatusForbidden && (hasRetryAfter || remaining == 0 || isRateLimitMessage(body)):
		why := fmt.Sprintf("%s %s: %d rate limited", method, u.Path, code)
		switch {
		case hasRetryAfter:
			return nil, retryAfter, errors.New(why + " (Retry-After)")
		case remaining == 0 && !reset.IsZero():
			return nil, max(reset.Sub(c.clock.Now()), time.Second), errors.New(why + " (X-RateLimit-Reset)")
		default:
			return nil, expBackoff(backoffSecondary, 16*backoffSecondary, try), errors.New(why + " (secondary limit)")
		}
	case code >= 500:
		d := expBackoff(backoff5xx, backoff5xxMax, try)
		if hasRetryAfter {
			d = retryAfter
		}
		return nil, d, fmt.Errorf("%s %s: %d %s", method, u.Path, code, http.StatusText(code))
	default:
		return nil, 0, &APIError{Method: method, Path: u.Path, StatusCode: code, Message: errorMessage(body)}
	}
}

// expBackoff is base·2^(try-1), at most max.
func expBackoff(base, max time.Duration, try int) time.Duration {
	d := base
	for i := 1; i < try && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// rateHeaders reads X-RateLimit-Remaining (-1 when absent or malformed) and
// X-RateLimit-Reset (Unix seconds; zero when absent or malformed).
func rateHeaders(h http.Header) (remaining int, reset time.Time) {
	remaining = -1
	if v, err := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Remaining"))); err == nil && v >= 0 {
		remaining = v
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil && v > 0 {
		reset = time.Unix(v, 0)
	}
	return remaining, reset
}

// parseRetryAfter reads Retry-After: delay seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		if s > int64(24*time.Hour/time.Second) {
			s = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// isRateLimitMessage tells a 403 that is a rate limit (the forge says so in
// its message) from one that is a refusal.
func isRateLimitMessage(body []byte) bool {
	return strings.Contains(strings.ToLower(errorMessage(body)), "rate limit")
}

// errorMessage is the "message" of the forge's error JSON, or "".
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if len(e.Message) > 200 {
		return e.Message[:200] + "…"
	}
	return e.Message
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
