package app_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
)

// A served answer with X-RateLimit-Remaining: 0 and a reset in the year 9999
// pauses the installation for MaxServerWait at most, and only its requests of
// that resource: after the cap the client works again, without a restart.
func TestRateLimitResetCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	e.forge.AddInstallation(43)
	a := e.app(nil)
	c := a.InstallationClient(testInstallation)
	ctx := t.Context()
	if _, err := e.comment(ctx, c, "first"); err != nil {
		t.Fatal(err)
	}
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/issues/1/comments", Status: http.StatusOK, Body: `{}`,
		Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"253402300799"}, "X-Ratelimit-Resource": {"core"}}})
	res, err := c.Post(e.forge.URL+"/repos/octo/site/issues/1/comments", "application/json", strings.NewReader(`{"body":"hostile"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the hostile answer: %d", res.StatusCode)
	}
	_, err = e.comment(ctx, c, "paused")
	var rl *app.RateLimitError
	if !errors.As(err, &rl) || rl.Wait > app.MaxServerWait || rl.Wait < app.MaxServerWait-time.Second {
		t.Fatalf("during the pause: %v (%#v), want a RateLimitError waiting %v", err, rl, app.MaxServerWait)
	}
	// Another installation is not limited by it.
	if _, err := e.comment(ctx, a.InstallationClient(43), "other installation"); err != nil {
		t.Fatalf("installation 43: %v", err)
	}
	// MaxWait (90 s) is less than what is left of the pause.
	e.clock.Advance(app.MaxServerWait - 10*time.Minute)
	if _, err := e.comment(ctx, c, "still paused"); !errors.Is(err, app.ErrRateLimited) {
		t.Fatalf("ten minutes before the cap: %v", err)
	}
	e.clock.Advance(10 * time.Minute)
	if _, err := e.comment(ctx, c, "recovered"); err != nil {
		t.Fatalf("after the cap: %v", err)
	}
}

// The token endpoint's Retry-After: 999999999 pauses the app's own requests
// for MaxServerWait at most; an installation that holds a token goes on using
// it (also within RefreshBefore of its expiry, while the pause lasts), and
// after the cap a new installation gets its token.
func TestTokenEndpointRetryAfterCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	e.forge.AddInstallation(43)
	a := e.app(nil)
	held := a.InstallationClient(testInstallation)
	ctx := t.Context()
	if _, err := e.comment(ctx, held, "token fetched"); err != nil {
		t.Fatal(err)
	}
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: "/installations/43/access_tokens", Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {"999999999"}}, Body: `{"message":"slow down"}`})
	_, _, err := a.InstallationToken(ctx, 43, nil)
	var rl *app.RateLimitError
	if !errors.As(err, &rl) || rl.Installation != 0 || rl.Reason != "Retry-After" || rl.Wait != app.MaxServerWait {
		t.Fatalf("token of 43: %v (%#v), want a RateLimitError of the app, Retry-After capped at %v", err, rl, app.MaxServerWait)
	}
	tokens := tokenRequests(e.forge)
	// The installation holding a token is not blocked, now nor once its
	// token is due for renewal (56 min: within RefreshBefore of its expiry).
	if _, err := e.comment(ctx, held, "during the pause"); err != nil {
		t.Fatalf("installation with a token, during the pause: %v", err)
	}
	e.clock.Advance(56 * time.Minute)
	if _, err := e.comment(ctx, held, "due for renewal"); err != nil {
		t.Fatalf("installation with a token due for renewal: %v", err)
	}
	if got := tokenRequests(e.forge); got != tokens {
		t.Errorf("%d token requests during the pause, want none", got-tokens)
	}
	e.clock.Advance(app.MaxServerWait - 56*time.Minute)
	if _, err := e.comment(ctx, a.InstallationClient(43), "after the cap"); err != nil {
		t.Fatalf("installation 43 after the cap: %v", err)
	}
	if _, err := e.comment(ctx, held, "renewed"); err != nil {
		t.Fatalf("installation 42 after the cap: %v", err)
	}
	if got := tokenRequests(e.forge); got != tokens+2 {
		t.Errorf("%d token requests after the cap, want 2 (43's, 42's renewal)", got-tokens)
	}
}
