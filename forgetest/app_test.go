package forgetest_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
)

// The app endpoints: tokens for installations added only, as the app; the
// token authorizes comments until it expires; bodies are checked against the
// description; Throttle refuses with Retry-After until its time.
func TestInstallationEndpoints(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	clock := forgetest.NewClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	f := forgetest.New(t, forgetest.Options{AppID: "1", PublicKey: &key.PublicKey, Now: clock.Now, AllowViolations: true, TokenLifetime: 10 * time.Minute})
	f.AddInstallation(5)
	jwt, _ := app.SignJWT("1", key, clock.Now())
	do := func(method, path, auth, body string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, f.URL+path, strings.NewReader(body))
		req.Header.Set("User-Agent", "test")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	if code, _, _ := do("POST", "/app/installations/6/access_tokens", jwt, ""); code != 404 {
		t.Errorf("unknown installation: %d", code)
	}
	if code, _, _ := do("POST", "/app/installations/5/access_tokens", "not-a-jwt", ""); code != 401 {
		t.Errorf("no JWT: %d", code)
	}
	if code, _, _ := do("POST", "/app/installations/5/access_tokens", jwt, `{"repositories":"site"}`); code != 422 {
		t.Errorf("a body off the description: %d", code)
	}
	code, _, body := do("POST", "/app/installations/5/access_tokens", jwt, `{"repositories":["site"]}`)
	var tok struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if json.Unmarshal([]byte(body), &tok); code != 201 || tok.Token == "" || !tok.ExpiresAt.Equal(clock.Now().Add(10*time.Minute)) {
		t.Fatalf("token: %d %s", code, body)
	}
	comments := "/repos/o/r/issues/3/comments"
	if code, _, _ := do("POST", comments, tok.Token, `{"title":"no body"}`); code != 422 {
		t.Errorf("comment without body: %d", code)
	}
	if code, _, _ := do("POST", comments, "fit_wrong", `{"body":"hi"}`); code != 401 {
		t.Errorf("unknown token: %d", code)
	}
	if code, h, _ := do("POST", comments, tok.Token, `{"body":"hi"}`); code != 201 || h.Get("X-RateLimit-Remaining") != "4999" {
		t.Errorf("comment: %d, remaining %q", code, h.Get("X-RateLimit-Remaining"))
	}
	f.Throttle(5, 1500*time.Millisecond)
	if code, h, _ := do("POST", comments, tok.Token, `{"body":"hi"}`); code != 403 || h.Get("Retry-After") != "2" {
		t.Errorf("throttled: %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	clock.Advance(1500 * time.Millisecond)
	if code, _, _ := do("POST", comments, tok.Token, `{"body":"again"}`); code != 201 {
		t.Errorf("after the throttle: %d", code)
	}
	clock.Advance(10 * time.Minute)
	if code, _, _ := do("POST", comments, tok.Token, `{"body":"late"}`); code != 401 {
		t.Errorf("expired token: %d", code)
	}
	c := f.Comments()
	if len(c) != 2 || c[0].Body != "hi" || c[0].Installation != 5 || c[0].Owner != "o" || c[0].Issue != 3 {
		t.Errorf("comments: %+v", c)
	}
	if toks := f.Tokens(); len(toks) != 1 || toks[0].Repositories[0] != "site" {
		t.Errorf("tokens: %+v", toks)
	}
	if len(f.Violations()) != 2 {
		t.Errorf("violations: %q, want the two bodies off the description", f.Violations())
	}
}

// GET /app answers the app (a JWT, not a token) with Options.App's events
// and permissions, in the description's form.
func TestGetApp(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.Options{Token: "tok", App: forgetest.AppInfo{
		Slug: "triage", Events: []string{"issues", "push"}, Permissions: map[string]string{"issues": "write"},
	}})
	jwt, err := app.SignJWT(f.AppID(), forgetest.PrivateKey(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		auth string
		code int
	}{{"token tok", 401}, {"Bearer " + jwt, 200}} {
		req, _ := http.NewRequest("GET", f.URL+"/app", nil)
		req.Header.Set("User-Agent", "test")
		req.Header.Set("Authorization", tt.auth)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Slug        string
			Events      []string
			Permissions map[string]string
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if res.StatusCode != tt.code || err != nil {
			t.Fatalf("%.12s…: %d (%v), want %d", tt.auth, res.StatusCode, err, tt.code)
		}
		if tt.code == 200 && (got.Slug != "triage" || strings.Join(got.Events, ",") != "issues,push" || got.Permissions["issues"] != "write") {
			t.Errorf("GET /app: %+v", got)
		}
	}
}
