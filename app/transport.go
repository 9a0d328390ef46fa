package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// transport sends requests as the app (installation 0), as an
// installation, or with a tenant's token (static).
type transport struct {
	a            *App
	installation int64
	scope        *Scope
	static       Token  // a tenant's token, sent as "token …"
	tenant       string // whose static token
}

// Backoff of an idempotent request after a 5xx or a network error.
const (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// RoundTrip implements http.RoundTripper; InstallationTransport documents
// what it does.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := t.a
	ctx := req.Context()
	if !a.sameOrigin(req) {
		return a.base.RoundTrip(req)
	}
	// The request waits on its installation's pauses (a secondary limit, a
	// Retry-After) and on those of its resource's primary limit only.
	resource := resourceOf(strings.TrimPrefix(req.URL.Path, a.api.Path))
	whole, own := a.budget(t.installation, t.tenant, ""), a.budget(t.installation, t.tenant, resource)
	budgets := []*budget{whole, own}
	what := req.Method + " " + req.URL.Path
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	var waited time.Duration
	renewed, sent := false, false
	// A RoundTripper closes the request's body, also when it fails before
	// sending it.
	fail := func(err error) (*http.Response, error) {
		if !sent && req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	for try := 0; ; try++ {
		logWait := func(d time.Duration, reason string) {
			a.log.LogAttrs(ctx, slog.LevelWarn, "app: waiting for the rate limit", slog.String("request", what), slog.Int64("installation", t.installation), slog.Duration("wait", d), slog.String("reason", reason))
		}
		if d, reason, err := waitBudgets(ctx, budgets, a.clock, &waited, a.maxWait, logWait); err != nil {
			if errors.Is(err, ErrRateLimited) {
				return fail(&RateLimitError{Method: req.Method, Path: req.URL.Path, Installation: t.installation, Tenant: t.tenant, Wait: d, Reason: reason, MaxWait: a.maxWait, Retries: try})
			}
			return fail(fmt.Errorf("app: %s: %w", what, err))
		}
		tok, err := t.credentials(ctx)
		if err != nil {
			return fail(err)
		}
		out := req.Clone(ctx)
		if try > 0 && req.GetBody != nil {
			if out.Body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("app: %s: replaying the body: %w", what, err)
			}
		}
		if !t.static.IsZero() {
			out.Header.Set("Authorization", "token "+tok.Reveal())
		} else {
			out.Header.Set("Authorization", "Bearer "+tok.Reveal())
		}
		if out.Header.Get("User-Agent") == "" {
			out.Header.Set("User-Agent", a.userAgent)
		}
		res, err := a.base.RoundTrip(out)
		sent = true
		retriesLeft := try < a.maxRetries && replayable
		if err != nil {
			if ctx.Err() != nil || !retriesLeft || !idempotent(req.Method) {
				return nil, err
			}
			d := backoff(try)
			if waited+d > a.maxWait {
				return nil, err
			}
			a.log.LogAttrs(ctx, slog.LevelWarn, "app: retrying after a network error", slog.String("request", what), slog.Duration("wait", d), slog.String("error", err.Error()))
			waited += d
			if err := a.clock.Sleep(ctx, d); err != nil {
				return nil, fmt.Errorf("app: %s: %w", what, err)
			}
			continue
		}
		now := a.clock.Now()
		th := classify(res, now)
		if th.wait > 0 {
			switch {
			case !th.primary:
				whole.pause(now.Add(th.wait), th.reason)
			case th.resource != "" && th.resource != resource:
				// The forge counts this request against another resource
				// than resourceOf guessed: that one pauses, and so does this
				// request's when it was refused, so that it is not sent
				// again at once.
				a.budget(t.installation, t.tenant, th.resource).pause(now.Add(th.wait), th.reason)
				if th.limited {
					own.pause(now.Add(th.wait), th.reason)
				}
			default:
				own.pause(now.Add(th.wait), th.reason)
			}
		}
		switch {
		case th.limited:
			if !replayable {
				return res, nil
			}
			if !retriesLeft || waited+th.wait > a.maxWait {
				drain(res)
				return nil, &RateLimitError{Method: req.Method, Path: req.URL.Path, Installation: t.installation, Tenant: t.tenant, Wait: th.wait, Reason: th.reason, MaxWait: a.maxWait, Retries: try}
			}
			drain(res)
			continue // waitBudgets holds it back
		case res.StatusCode == http.StatusUnauthorized && t.installation != 0 && !renewed && replayable:
			// A revoked token, or one the forge expired early.
			renewed = true
			a.dropToken(t.installation, t.scope, tok)
			drain(res)
			continue
		case res.StatusCode >= 500 && idempotent(req.Method) && retriesLeft:
			d := backoff(try)
			if ra, ok := parseRetryAfter(res.Header.Get("Retry-After"), now); ok {
				d = max(ra, time.Second)
			}
			if waited+d > a.maxWait {
				return res, nil
			}
			drain(res)
			a.log.LogAttrs(ctx, slog.LevelWarn, "app: retrying after a server error", slog.String("request", what), slog.Int("status", res.StatusCode), slog.Duration("wait", d))
			waited += d
			if err := a.clock.Sleep(ctx, d); err != nil {
				return nil, fmt.Errorf("app: %s: %w", what, err)
			}
			continue
		}
		if ref := refusal(req, res, t.installation); ref != nil {
			drain(res)
			return nil, ref
		}
		return res, nil
	}
}

// credentials returns the token to send: a tenant's token, the app's JWT,
// or the installation's token.
func (t *transport) credentials(ctx context.Context) (Token, error) {
	if !t.static.IsZero() {
		return t.static, nil
	}
	if t.installation == 0 {
		return t.a.JWT(t.a.clock.Now())
	}
	tok, _, err := t.a.InstallationToken(ctx, t.installation, t.scope)
	return tok, err
}

// sameOrigin reports whether req goes to the API's scheme and host, the only
// place credentials are sent.
func (a *App) sameOrigin(req *http.Request) bool {
	return req.URL != nil && req.URL.Scheme == a.api.Scheme && strings.EqualFold(req.URL.Host, a.api.Host)
}

// idempotent reports whether a request may be sent again after an answer
// that says nothing about whether it was carried out.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// backoff is 1 s·2^try, at most 30 s.
func backoff(try int) time.Duration {
	d := backoffBase
	for range min(try, 10) {
		d *= 2
	}
	return min(d, backoffMax)
}

// drain reads a little of a response that is thrown away, so that its
// connection can be reused, and closes it.
func drain(res *http.Response) {
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
}

// String names the transport's principal, never its credentials.
func (t *transport) String() string {
	if !t.static.IsZero() {
		return "tenant " + t.tenant + "'s token (redacted)"
	}
	if t.installation == 0 {
		return t.a.String()
	}
	return t.a.String() + " installation " + strconv.FormatInt(t.installation, 10)
}
