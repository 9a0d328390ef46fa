package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scope narrows an installation token to some repositories and permissions
// (the body of the forge's access-token request). The nil Scope asks for
// everything the installation may do.
type Scope struct {
	// Repositories are repository names (without the owner).
	Repositories []string `json:"repositories,omitempty"`
	// RepositoryIDs are repository ids.
	RepositoryIDs []int64 `json:"repository_ids,omitempty"`
	// Permissions maps a permission ("issues", "contents", …) to "read" or
	// "write".
	Permissions map[string]string `json:"permissions,omitempty"`
}

// normalize returns a sorted copy of s, or nil when s narrows nothing, so
// that equal scopes share a cached token.
func (s *Scope) normalize() *Scope {
	if s == nil || len(s.Repositories) == 0 && len(s.RepositoryIDs) == 0 && len(s.Permissions) == 0 {
		return nil
	}
	n := &Scope{Repositories: slices.Sorted(slices.Values(s.Repositories)), RepositoryIDs: slices.Sorted(slices.Values(s.RepositoryIDs)), Permissions: maps.Clone(s.Permissions)}
	n.Repositories = slices.Compact(n.Repositories)
	n.RepositoryIDs = slices.Compact(n.RepositoryIDs)
	return n
}

// key is s as a map key (encoding/json sorts map keys).
func (s *Scope) key() string {
	if s == nil {
		return ""
	}
	b, _ := json.Marshal(s)
	return string(b)
}

type tokenKey struct {
	installation int64
	scope        string
}

// tokenEntry is one cached token, and the request that fetches its
// successor while one is running.
type tokenEntry struct {
	tok    Token
	exp    time.Time
	flight *flight
}

// flight is one token request that every caller waiting for it shares.
type flight struct {
	done chan struct{}
	tok  Token
	exp  time.Time
	err  error
}

// tokenTimeout bounds one token request, which runs for every caller waiting
// on it whatever their own contexts.
const tokenTimeout = time.Minute

// InstallationToken returns a token of installation id narrowed to scope
// (nil: not narrowed), and when it expires. A token is cached until
// Options.RefreshBefore its expiry; however many callers ask at once, one
// request fetches it. A token held that has not expired yet is used while its
// successor cannot be had: while the app's requests are paused for a rate
// limit (the access-token endpoint's, say), no request is made; when the
// request fails, its error is logged. The error says which installation and
// what the forge answered, never the token.
func (a *App) InstallationToken(ctx context.Context, id int64, scope *Scope) (Token, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return Token{}, time.Time{}, fmt.Errorf("app: installation %d: token: %w", id, err)
	}
	scope = scope.normalize()
	held, f := a.cachedOrFlight(ctx, tokenKey{id, scope.key()}, scope)
	if f == nil {
		return held.tok, held.exp, nil
	}
	select {
	case <-f.done:
		if f.err != nil && !held.tok.IsZero() && a.clock.Now().Before(held.exp) {
			a.log.LogAttrs(ctx, slog.LevelWarn, "app: installation token not renewed; the one held is used until it expires", slog.Int64("installation", id), slog.Time("expires_at", held.exp), slog.String("error", f.err.Error()))
			return held.tok, held.exp, nil
		}
		return f.tok, f.exp, f.err
	case <-ctx.Done():
		return Token{}, time.Time{}, fmt.Errorf("app: installation %d: waiting for a token: %w", id, ctx.Err())
	}
}

// cachedOrFlight returns the cached entry with a nil flight when its token is
// fresh, or when it has not expired and the app is paused by a rate limit;
// otherwise the entry held (perhaps empty) and the flight that fetches a new
// one (starting it when none runs).
func (a *App) cachedOrFlight(ctx context.Context, k tokenKey, scope *Scope) (tokenEntry, *flight) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.tokens[k]
	now := a.clock.Now()
	if e == nil {
		a.sweep(now)
		e = &tokenEntry{}
		a.tokens[k] = e
	}
	if !e.tok.IsZero() && now.Before(e.exp.Add(-a.refresh)) {
		return *e, nil
	}
	if !e.tok.IsZero() && now.Before(e.exp) && a.appPausedLocked(now) {
		return *e, nil
	}
	if e.flight == nil {
		f := &flight{done: make(chan struct{})}
		e.flight = f
		// The request is the flight's, not the first caller's: a caller
		// that gives up must not fail the others.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokenTimeout)
		go func() {
			defer cancel()
			f.tok, f.exp, f.err = a.requestToken(fctx, k.installation, scope)
			a.mu.Lock()
			if f.err == nil {
				e.tok, e.exp = f.tok, f.exp
			}
			e.flight = nil
			a.mu.Unlock()
			close(f.done)
		}()
	}
	return tokenEntry{tok: e.tok, exp: e.exp}, e.flight
}

// appPausedLocked reports whether a rate limit pauses the app's own
// requests (those the access-token request is one of) at now. a.mu is held.
func (a *App) appPausedLocked(now time.Time) bool {
	for k, b := range a.budgets {
		if k.installation == 0 && k.tenant == "" && (k.resource == "" || k.resource == "core") {
			if d, _ := b.until(now); d > 0 {
				return true
			}
		}
	}
	return false
}

// sweep drops expired tokens, so that the cache holds only live ones.
func (a *App) sweep(now time.Time) {
	for k, e := range a.tokens {
		if e.flight == nil && !now.Before(e.exp) {
			delete(a.tokens, k)
		}
	}
}

// dropToken forgets tok, when the forge refused it (revoked, or the
// installation suspended), unless another caller replaced it already.
func (a *App) dropToken(id int64, scope *Scope, tok Token) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.tokens[tokenKey{id, scope.key()}]; e != nil && e.tok.p == tok.p {
		e.tok, e.exp = Token{}, time.Time{}
	}
}

// narrowedHint is what a refused token request of a narrowed scope usually
// means.
const narrowedHint = "the token was narrowed to repositories or permissions the installation lacks?"

// maxTokenAnswer bounds the access-token answer read (a token with a long
// repository list is a few hundred KB at most).
const maxTokenAnswer = 4 << 20

// requestToken asks the forge for a token of installation id, as the app.
func (a *App) requestToken(ctx context.Context, id int64, scope *Scope) (Token, time.Time, error) {
	path := a.api.Path + "/app/installations/" + strconv.FormatInt(id, 10) + "/access_tokens"
	what := "app: installation " + strconv.FormatInt(id, 10) + ": access token"
	var body []byte
	if scope != nil {
		body, _ = json.Marshal(scope)
	}
	u := *a.api
	u.Path, u.RawPath = path, ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return Token{}, time.Time{}, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.Transport().RoundTrip(req)
	if ref := (*RefusedError)(nil); errors.As(err, &ref) {
		ref.Installation = id
		if scope != nil {
			ref.Hint = narrowedHint
		}
		return Token{}, time.Time{}, ref
	}
	if err != nil {
		return Token{}, time.Time{}, fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxTokenAnswer+1))
	if err != nil {
		return Token{}, time.Time{}, fmt.Errorf("%s: reading the answer: %w", what, err)
	}
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("%s: %d %s", what, res.StatusCode, http.StatusText(res.StatusCode))
		if m := errorMessage(b); m != "" {
			msg += ": " + m
		}
		switch res.StatusCode {
		case http.StatusUnauthorized:
			msg += " (the forge refused the app's JWT: check the app id and that the private key is this app's)"
		case http.StatusNotFound:
			// No retry brings an uninstalled installation back.
			return Token{}, time.Time{}, &RefusedError{Method: req.Method, Path: req.URL.Path, Installation: id,
				StatusCode: res.StatusCode, Message: errorMessage(b), Hint: "no such installation of this app: uninstalled?"}
		case http.StatusForbidden, http.StatusUnprocessableEntity:
			if scope != nil {
				msg += " (" + narrowedHint + ")"
			}
		}
		return Token{}, time.Time{}, errors.New(msg)
	}
	if len(b) > maxTokenAnswer {
		return Token{}, time.Time{}, fmt.Errorf("%s: answer over %d bytes", what, maxTokenAnswer)
	}
	var ans struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	// The decoding error could quote the answer, token included: it is not
	// passed on.
	if json.Unmarshal(b, &ans) != nil || ans.Token == "" || ans.ExpiresAt.IsZero() {
		return Token{}, time.Time{}, fmt.Errorf("%s: the answer is not a token with an expiry (%d bytes of %s)", what, len(b), clip(res.Header.Get("Content-Type")))
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "app: installation token issued", slog.Int64("installation", id), slog.Time("expires_at", ans.ExpiresAt), slog.Bool("narrowed", scope != nil))
	return newToken(ans.Token), ans.ExpiresAt, nil
}

// errorMessage is the "message" of the forge's error JSON, or "".
func errorMessage(body []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return clip(strings.ToValidUTF8(e.Message, "�"))
}
