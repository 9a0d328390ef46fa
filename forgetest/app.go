package forgetest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// IssuedToken is an installation access token the fake issued.
type IssuedToken struct {
	Installation int64
	// Token is the secret itself, so that tests can check it leaks nowhere.
	Token        string
	IssuedAt     time.Time // by the fake's clock
	ExpiresAt    time.Time
	Repositories []string          // as asked for; nil: not narrowed
	Permissions  map[string]string // as asked for; nil: not narrowed
}

// Comment is an issue comment made through the fake.
type Comment struct {
	ID           int64
	Owner, Repo  string
	Issue        int64
	Body         string
	Installation int64     // whose token made it; 0: Options.Token
	At           time.Time // by the fake's clock
}

// installation is one installation of the app: its limits.
type installation struct {
	blockedUntil time.Time   // a secondary limit: every request refused until then
	posts        []time.Time // content-creating requests, for the secondary limit
	used         int         // requests in the current primary window
	window       time.Time
}

// AddInstallation makes installation id of the app exist: its access tokens
// can be requested (as the app), and its tokens used. Requests for an
// installation never added are answered 404.
func (s *Server) AddInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installations[id] == nil {
		s.installations[id] = &installation{}
	}
}

// Throttle puts installation id under a secondary rate limit for d: its
// requests until then are answered 403 with Retry-After (the seconds left,
// at least 1), as the forge does when a client creates content too fast.
func (s *Server) Throttle(id int64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.installations[id]
	if in == nil {
		panic(fmt.Sprintf("forgetest: no installation %d: call AddInstallation first", id))
	}
	in.blockedUntil = s.now().Add(d)
}

// Tokens returns the installation tokens issued, in order.
func (s *Server) Tokens() []IssuedToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Comments returns the issue comments made, in order.
func (s *Server) Comments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.comments)
}

// appOperation serves the operations of an app and its installations, and
// reports whether op is one.
func (s *Server) appOperation(w http.ResponseWriter, r *http.Request, op *operation, params map[string]string, body []byte, now time.Time) bool {
	switch op.OperationID {
	case "apps/create-installation-access-token":
		if msg := s.authorize(r, AppHook, now); msg != "" {
			s.errorJSON(w, op, http.StatusUnauthorized, msg)
			return true
		}
		if !s.primaryLimit(w, op, now) || s.fault(w, r) {
			return true
		}
		id, _ := strconv.ParseInt(params["installation_id"], 10, 64)
		s.issueToken(w, op, id, body, now)
		return true
	case "apps/get-authenticated":
		if msg := s.authorize(r, AppHook, now); msg != "" {
			s.errorJSON(w, op, http.StatusUnauthorized, msg)
			return true
		}
		if !s.primaryLimit(w, op, now) || s.fault(w, r) {
			return true
		}
		s.getApp(w, op, now)
		return true
	}
	return false
}

// issueToken answers 201 with a new token of installation id.
func (s *Server) issueToken(w http.ResponseWriter, op *operation, id int64, body []byte, now time.Time) {
	var scope struct {
		Repositories []string          `json:"repositories"`
		Permissions  map[string]string `json:"permissions"`
	}
	if len(body) > 0 {
		json.Unmarshal(body, &scope) // checked against the description already
	}
	s.mu.Lock()
	if s.installations[id] == nil {
		s.mu.Unlock()
		s.errorJSON(w, op, http.StatusNotFound, "Not Found")
		return
	}
	var b [20]byte
	rand.Read(b[:])
	t := IssuedToken{
		Installation: id, Token: "fit_" + hex.EncodeToString(b[:]), IssuedAt: now,
		ExpiresAt:    now.Add(s.opts.TokenLifetime).UTC().Truncate(time.Second),
		Repositories: scope.Repositories, Permissions: scope.Permissions,
	}
	s.issued = append(s.issued, t)
	s.mu.Unlock()
	ans := map[string]any{
		"token": t.Token, "expires_at": t.ExpiresAt.Format(time.RFC3339),
		"permissions": map[string]any{"issues": "write", "metadata": "read"}, "repository_selection": "all",
	}
	if t.Permissions != nil {
		ans["permissions"] = t.Permissions
	}
	if t.Repositories != nil {
		ans["repository_selection"] = "selected"
	}
	s.answer(w, op, http.StatusCreated, ans)
}

// installationOf finds the installation whose live token authorizes r; it
// returns the 401 message otherwise.
func (s *Server) installationOf(r *http.Request, now time.Time) (int64, string) {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || cred == "" || !strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token") {
		return 0, "Requires authentication"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.issued {
		if subtle.ConstantTimeCompare([]byte(cred), []byte(t.Token)) == 1 {
			if !now.Before(t.ExpiresAt) {
				return 0, "Bad credentials" // what the forge says of an expired token
			}
			return t.Installation, ""
		}
	}
	return 0, "Bad credentials"
}

// installationLimits applies installation id's limits to a request: a
// secondary limit in force (Throttle, or more than SecondaryLimit
// content-creating requests a minute) is 403 with Retry-After; the primary
// limit (InstallationRateLimit an hour) is 403 with X-RateLimit-Remaining: 0.
func (s *Server) installationLimits(w http.ResponseWriter, op *operation, id int64, creates bool, now time.Time) bool {
	s.mu.Lock()
	in := s.installations[id]
	if in.window.IsZero() || !now.Before(in.window.Add(time.Hour)) {
		in.window, in.used = now, 0
	}
	if creates && s.opts.SecondaryLimit > 0 {
		in.posts = slices.DeleteFunc(in.posts, func(t time.Time) bool { return !t.After(now.Add(-time.Minute)) })
		if len(in.posts) >= s.opts.SecondaryLimit && !now.Before(in.blockedUntil) {
			in.blockedUntil = now.Add(s.opts.SecondaryRetryAfter)
		}
	}
	blocked := in.blockedUntil.Sub(now)
	primaryOK := in.used < s.opts.InstallationRateLimit
	ok := blocked <= 0 && primaryOK
	if ok {
		in.used++
		if creates {
			in.posts = append(in.posts, now)
		}
	} else {
		s.throttled++
	}
	remaining, reset := s.opts.InstallationRateLimit-in.used, in.window.Add(time.Hour)
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.InstallationRateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(s.opts.InstallationRateLimit-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	switch {
	case blocked > 0:
		secs := int64((blocked + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		s.errorJSON(w, op, http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
	case !primaryOK:
		s.errorJSON(w, op, http.StatusForbidden, "API rate limit exceeded for installation.")
	}
	return ok
}

// createComment answers 201 with a new comment on an issue.
func (s *Server) createComment(w http.ResponseWriter, op *operation, id int64, params map[string]string, body []byte, now time.Time) {
	var in struct {
		Body string `json:"body"`
	}
	json.Unmarshal(body, &in) // checked against the description already
	issue, _ := strconv.ParseInt(params["issue_number"], 10, 64)
	s.mu.Lock()
	s.nextID++
	c := Comment{ID: s.nextID, Owner: params["owner"], Repo: params["repo"], Issue: issue, Body: in.Body, Installation: id, At: now}
	s.comments = append(s.comments, c)
	s.mu.Unlock()
	repoURL := fmt.Sprintf("%s/repos/%s/%s", s.URL, c.Owner, c.Repo)
	at := now.UTC().Format(time.RFC3339)
	bot := "forgehooks-test[bot]"
	s.answer(w, op, http.StatusCreated, map[string]any{
		"id": c.ID, "node_id": "IC_" + strconv.FormatInt(c.ID, 10), "body": c.Body,
		"url":       fmt.Sprintf("%s/issues/comments/%d", repoURL, c.ID),
		"html_url":  fmt.Sprintf("https://forge.example/%s/%s/issues/%d#issuecomment-%d", c.Owner, c.Repo, issue, c.ID),
		"issue_url": fmt.Sprintf("%s/issues/%d", repoURL, issue), "created_at": at, "updated_at": at,
		"author_association": "NONE",
		"user": map[string]any{
			"login": bot, "id": 1000 + id, "node_id": "BOT_" + strconv.FormatInt(id, 10), "type": "Bot", "site_admin": false,
			"avatar_url": "", "gravatar_id": "", "url": s.URL + "/users/" + bot, "html_url": "https://forge.example/apps/forgehooks-test",
			"followers_url": "", "following_url": "", "gists_url": "", "starred_url": "", "subscriptions_url": "",
			"organizations_url": "", "repos_url": "", "events_url": "", "received_events_url": "",
		},
	})
}
