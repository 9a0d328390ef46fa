package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

// tokenRequests counts the fake's access-token requests.
func tokenRequests(f *forgetest.Server) int {
	n := 0
	for _, r := range f.Requests() {
		if strings.HasSuffix(r.Path, "/access_tokens") {
			n++
		}
	}
	return n
}

// 200 handlers of one installation, all asking for a client at the same
// moment (deliveries over HTTP to the middleware), cause one token request;
// each posts its comment.
func TestConcurrentHandlersShareOneToken(t *testing.T) {
	t.Parallel()
	const n = 200
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	var failed atomic.Int64
	wh.On("issue_comment.created", func(ctx context.Context, ev emitter.Event) error {
		arrived.Done()
		<-release // every handler is running before the first asks for a token
		c, err := a.Client(ctx)
		if err != nil {
			failed.Add(1)
			return err
		}
		if _, err := e.comment(ctx, c, "hello from "+ev.ID); err != nil {
			failed.Add(1)
			return err
		}
		return nil
	})
	url := receiver(t, wh, webhooks.MiddlewareOptions{Timeout: -1})
	payload := commentDelivery(testInstallation, e.forge.URL)
	client := &http.Client{Timeout: 30 * time.Second}
	statuses := make(chan int, n)
	for i := range n {
		go func() {
			code, err := deliver(client, url, fmt.Sprintf("d-%d", i), "issue_comment", payload)
			if err != nil {
				t.Error(err)
			}
			statuses <- code
		}()
	}
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		t.Fatal("the 200 handlers did not all start")
	}
	close(release)
	for range n {
		if code := <-statuses; code != http.StatusOK {
			t.Errorf("delivery answered %d", code)
		}
	}
	if got := tokenRequests(e.forge); got != 1 {
		t.Errorf("%d token requests for %d concurrent handlers, want 1", got, n)
	}
	if got := len(e.forge.Comments()); got != n || failed.Load() != 0 {
		t.Errorf("%d comments, %d handlers failed; want %d comments", got, failed.Load(), n)
	}
	for _, c := range e.forge.Comments() {
		if c.Installation != testInstallation {
			t.Fatalf("comment made as installation %d", c.Installation)
		}
	}
}

// A token is used until RefreshBefore (5 min) its expiry, then replaced
// before it expires: the forge never sees an expired token.
func TestTokenRefreshedBeforeExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{})
	a := e.app(nil)
	c := a.InstallationClient(testInstallation)
	ctx := t.Context()
	steps := []struct {
		advance time.Duration
		tokens  int
	}{
		{0, 1},
		{30 * time.Minute, 1},
		{24 * time.Minute, 1},            // 54 min: still fresh
		{2 * time.Minute, 2},             // 56 min: within 5 min of expiry, replaced
		{50 * time.Minute, 2},            // 106 min: the second is still fresh (issued at 56)
		{5*time.Minute + time.Second, 3}, // 111 min + 1 s: replaced again
	}
	for i, s := range steps {
		e.clock.Advance(s.advance)
		if _, err := e.comment(ctx, c, fmt.Sprint("step ", i)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := tokenRequests(e.forge); got != s.tokens {
			t.Fatalf("step %d (%v): %d token requests, want %d", i, e.clock.Now().Sub(start), got, s.tokens)
		}
	}
	toks := e.forge.Tokens()
	for i := 1; i < len(toks); i++ {
		if !toks[i].IssuedAt.Before(toks[i-1].ExpiresAt) {
			t.Errorf("token %d issued at %v, after token %d expired (%v)", i, toks[i].IssuedAt, i-1, toks[i-1].ExpiresAt)
		}
	}
	// The forge refuses an expired token: the refresh is what kept the
	// requests above working.
	_, exp, err := a.InstallationToken(ctx, testInstallation, nil)
	if err != nil || !exp.Equal(toks[2].ExpiresAt) {
		t.Fatalf("cached token expires %v (%v), want %v", exp, err, toks[2].ExpiresAt)
	}
}

// A 403 secondary limit with Retry-After: 2 makes the installation's next
// requests wait the two seconds, then succeed: one refusal, no failure.
func TestSecondaryLimitMakesRequestsWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
	e.logs.watch = "app: waiting for the rate limit"
	a := e.app(nil)
	c := a.InstallationClient(testInstallation)
	ctx := t.Context()
	if _, err := e.comment(ctx, c, "before"); err != nil { // the token, fetched
		t.Fatal(err)
	}
	e.forge.Throttle(testInstallation, 2*time.Second)
	throttledAt := time.Now()
	const n = 10
	errs := make(chan error, n+1)
	go func() { _, err := e.comment(ctx, c, "first"); errs <- err }()
	select {
	case <-e.logs.matched: // refused once, and waiting
	case <-time.After(5 * time.Second):
		t.Fatal("no wait after the 403")
	}
	for i := range n {
		go func() { _, err := e.comment(ctx, c, fmt.Sprint("next ", i)); errs <- err }()
	}
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Errorf("a request failed instead of waiting: %v", err)
		}
	}
	var refused, created int
	for _, r := range e.forge.Requests() {
		if !strings.HasSuffix(r.Path, "/comments") {
			continue
		}
		switch r.Status {
		case http.StatusForbidden:
			refused++
		case http.StatusCreated:
			created++
			if r.At.After(throttledAt) && r.At.Sub(throttledAt) < 2*time.Second {
				t.Errorf("a comment was sent %v after the 403, before its Retry-After", r.At.Sub(throttledAt))
			}
		}
	}
	if refused != 1 || created != n+2 {
		t.Errorf("%d refused, %d created; want 1 refused (the others waited) and %d created", refused, created, n+2)
	}
	if !strings.Contains(e.logs.String(), "reason=Retry-After") {
		t.Errorf("log does not say why it waited:\n%s", e.logs.String())
	}
}

// A wait beyond MaxWait fails at once, with an error that says who is
// limited, why and for how long; a primary limit exhausted does the same.
func TestRateLimitBeyondMaxWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1, InstallationRateLimit: 3})
	a := e.app(func(o *app.Options) { o.MaxWait = 90 * time.Second })
	c := a.InstallationClient(testInstallation)
	ctx := t.Context()
	if _, err := e.comment(ctx, c, "ok"); err != nil {
		t.Fatal(err)
	}
	e.forge.Throttle(testInstallation, 10*time.Minute)
	_, err := e.comment(ctx, c, "throttled")
	var rl *app.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, app.ErrRateLimited) || rl.Installation != testInstallation || rl.Reason != "Retry-After" || rl.Wait != 10*time.Minute {
		t.Fatalf("err = %#v (%v), want a RateLimitError for installation %d, Retry-After 10m", rl, err, testInstallation)
	}
	for _, want := range []string{"installation 42", "Retry-After", "10m0s", "MaxWait 1m30s", "POST /repos/octo/site/issues/1/comments"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// The next request fails without being sent: the budget is shared.
	before := len(e.forge.Requests())
	if _, err := e.comment(ctx, c, "still"); !errors.Is(err, app.ErrRateLimited) {
		t.Fatalf("err = %v", err)
	}
	if len(e.forge.Requests()) != before {
		t.Error("a request was sent during the pause")
	}
	// After the pause: the primary limit (3 an hour) runs out.
	e.clock.Advance(10 * time.Minute)
	if _, err := e.comment(ctx, c, "ok again"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.comment(ctx, c, "last"); err != nil {
		t.Fatal(err)
	}
	_, err = e.comment(ctx, c, "over")
	if !errors.As(err, &rl) || !strings.HasPrefix(rl.Reason, "X-RateLimit") {
		t.Fatalf("err = %v, want the primary limit", err)
	}
}

// Idempotent requests are retried on 5xx with backoff, a POST is not; both
// within MaxRetries.
func TestRetriesIdempotentOn5xx(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	e.forge.Fail(forgetest.Fault{Method: "GET", Suffix: "/app/hook/deliveries", Status: 502, Body: `{"message":"bad gateway"}`, Times: 2})
	res, err := (&http.Client{Transport: a.Transport()}).Get(e.forge.URL + "/app/hook/deliveries")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || e.clock.Slept() != 3*time.Second {
		t.Errorf("status %d after %v of backoff, want 200 after 1s+2s", res.StatusCode, e.clock.Slept())
	}
	c := a.InstallationClient(testInstallation)
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 503, Body: `{}`, Times: 1})
	if code, _ := e.comment(t.Context(), c, "once"); code != 503 {
		t.Errorf("POST answered %d, want the 503 unretried", code)
	}
	e.forge.Fail(forgetest.Fault{Method: "GET", Suffix: "/app/hook/deliveries", Status: 500, Body: `{}`, Times: 100})
	res, err = (&http.Client{Transport: a.Transport()}).Get(e.forge.URL + "/app/hook/deliveries")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 500 {
		t.Errorf("status %d, want the last 500 after %d retries", res.StatusCode, app.DefaultMaxRetries)
	}
	served := 0
	for _, r := range e.forge.Requests() {
		if r.Path == "/app/hook/deliveries" && r.Status == 500 {
			served++
		}
	}
	if served != 1+app.DefaultMaxRetries {
		t.Errorf("%d tries of a failing GET, want %d", served, 1+app.DefaultMaxRetries)
	}
}

// A token narrowed to repositories and permissions is asked for as such,
// and cached apart from the installation's whole token.
func TestNarrowedToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	scope := &app.Scope{Repositories: []string{"site", "docs", "site"}, Permissions: map[string]string{"issues": "write"}}
	c := &http.Client{Transport: a.InstallationTransport(testInstallation, scope)}
	for range 3 {
		if _, err := e.comment(t.Context(), c, "narrow"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.comment(t.Context(), a.InstallationClient(testInstallation), "whole"); err != nil {
		t.Fatal(err)
	}
	toks := e.forge.Tokens()
	if len(toks) != 2 || strings.Join(toks[0].Repositories, ",") != "docs,site" || toks[0].Permissions["issues"] != "write" || toks[1].Repositories != nil {
		t.Errorf("tokens issued: %+v", toks)
	}
}

// Credentials go to the API's host only: a request elsewhere (a download a
// redirect points to) carries no Authorization.
func TestCredentialsOnlyForTheAPIHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, forgetest.Options{})
	a := e.app(nil)
	got := make(chan string, 1)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Authorization") }))
	defer other.Close()
	res, err := a.InstallationClient(testInstallation).Get(other.URL + "/archive.zip")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if auth := <-got; auth != "" {
		t.Errorf("another host got Authorization %q", auth)
	}
	if tokenRequests(e.forge) != 0 {
		t.Error("a token was fetched for a request to another host")
	}
}

// A token the forge refuses (revoked) is dropped and replaced once.
func TestRevokedTokenReplacedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1, TokenLifetime: 2 * time.Hour})
	a := e.app(func(o *app.Options) { o.RefreshBefore = time.Minute })
	c := a.InstallationClient(testInstallation)
	if _, err := e.comment(t.Context(), c, "one"); err != nil {
		t.Fatal(err)
	}
	// The App believes its token good for 2 h; the forge expires it sooner
	// (as when an installation's permissions change).
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 401, Body: `{"message":"Bad credentials"}`})
	if _, err := e.comment(t.Context(), c, "two"); err != nil {
		t.Fatal(err)
	}
	if got := tokenRequests(e.forge); got != 2 {
		t.Errorf("%d token requests, want 2 (the refused one replaced)", got)
	}
}

// A failed token request is shared by its waiters but not cached: the next
// call asks again. A caller that gives up does not fail the others.
func TestTokenFlightFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/access_tokens", Status: 500, Body: `{"message":"boom"}`})
	_, _, err := a.InstallationToken(t.Context(), testInstallation, nil)
	if err == nil || !strings.Contains(err.Error(), "installation 42: access token: 500 Internal Server Error: boom") {
		t.Fatalf("err = %v", err)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := a.InstallationToken(gone, testInstallation, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: %v", err)
	}
	if _, _, err := a.InstallationToken(t.Context(), testInstallation, nil); err != nil {
		t.Fatalf("after a failure: %v", err)
	}
	if got := tokenRequests(e.forge); got != 2 {
		t.Errorf("%d token requests, want 2", got)
	}
}

// A request whose body cannot be replayed (no GetBody) is not retried after
// a rate limit: its 403 is returned as the forge sent it, and the pause
// still holds back the installation's next requests.
func TestUnreplayableBodyNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	a := e.app(nil)
	c := a.InstallationClient(testInstallation)
	if _, err := e.comment(t.Context(), c, "first"); err != nil {
		t.Fatal(err)
	}
	e.forge.Throttle(testInstallation, 30*time.Second)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.forge.URL+"/repos/octo/site/issues/1/comments", io.NopCloser(strings.NewReader(`{"body":"once"}`)))
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 403 || res.Header.Get("Retry-After") != "30" || !strings.Contains(string(b), "secondary rate limit") {
		t.Fatalf("%d %q %s, want the forge's 403 whole", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	slept := e.clock.Slept()
	if _, err := e.comment(t.Context(), c, "next"); err != nil {
		t.Fatal(err)
	}
	if d := e.clock.Slept() - slept; d != 30*time.Second {
		t.Errorf("the next request waited %v, want 30s", d)
	}
}
