package inspector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]{64})">`)

// page fetches the page and returns its CSRF token.
func csrfToken(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	m := csrfMeta.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", rec.Body)
	}
	return m[1]
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{})
	for _, path := range []string{"/", "/assets/app.js", "/api/deliveries", "/api/stats"} {
		rec := httptest.NewRecorder()
		insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
		if rec.Code != 200 {
			t.Errorf("%s: %d", path, rec.Code)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "require-trusted-types-for 'script'", "frame-ancestors 'none'", "report-uri csp-report"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP allows something unsafe: %q", path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
	}
	// The page has no inline script or style for the policy to allow.
	rec := httptest.NewRecorder()
	insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	body := rec.Body.String()
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style=| on[a-z]+=`).MatchString(body) {
		t.Errorf("the page has inline script or style:\n%s", body)
	}
}

func TestAccess(t *testing.T) {
	t.Parallel()
	open := inspector.New(inspector.Options{})
	withToken := inspector.New(inspector.Options{Token: "s3cret-token"})
	for _, tc := range []struct {
		name   string
		h      http.Handler
		url    string
		header map[string]string
		want   int
	}{
		{"loopback IPv4", open, "http://127.0.0.1:3001/", nil, 200},
		{"loopback IPv6", open, "http://[::1]:3001/", nil, 200},
		{"localhost", open, "http://localhost:3001/", nil, 200},
		{"other 127/8", open, "http://127.0.0.2/", nil, 200},
		{"a rebinding name", open, "http://evil.example:3001/", nil, 403},
		{"a LAN address", open, "http://192.168.1.10:3001/", nil, 403},
		{"token: none", withToken, "http://203.0.113.5/", nil, 401},
		{"token: none on the API", withToken, "http://203.0.113.5/api/deliveries", nil, 401},
		{"token: wrong query", withToken, "http://203.0.113.5/?token=nope", nil, 401},
		{"token: right query sets the cookie", withToken, "http://203.0.113.5/?token=s3cret-token", nil, 303},
		{"token: cookie", withToken, "http://203.0.113.5/api/deliveries", map[string]string{"Cookie": "forgehooks_inspector=s3cret-token"}, 200},
		{"token: wrong cookie", withToken, "http://203.0.113.5/api/deliveries", map[string]string{"Cookie": "forgehooks_inspector=x"}, 401},
		{"token: bearer", withToken, "http://203.0.113.5/api/deliveries", map[string]string{"Authorization": "Bearer s3cret-token"}, 200},
		{"token: query only opens the page", withToken, "http://203.0.113.5/api/deliveries?token=s3cret-token", nil, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.url, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.want == 303 {
				c := rec.Result().Cookies()
				if len(c) != 1 || c[0].Value != "s3cret-token" || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
					t.Errorf("cookie %+v", c)
				}
				if loc := rec.Header().Get("Location"); strings.Contains(loc, "token") {
					t.Errorf("redirect keeps the token: %s", loc)
				}
			}
		})
	}
}

func TestActionsNeedCSRF(t *testing.T) {
	t.Parallel()
	h := newHarness(t, inspector.Options{})
	id := "csrf-delivery"
	if code := h.post(t, "issues", id, []byte(`{"action":"opened"}`), testSecret); code != 200 {
		t.Fatal(code)
	}
	token := csrfToken(t, h.insp)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, 403},
		{"wrong token", map[string]string{"X-CSRF-Token": strings.Repeat("0", 64)}, 403},
		{"cross-site", map[string]string{"X-CSRF-Token": token, "Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site, other origin", map[string]string{"X-CSRF-Token": token, "Sec-Fetch-Site": "same-site"}, 403},
		{"right token", map[string]string{"X-CSRF-Token": token, "Sec-Fetch-Site": "same-origin"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "http://127.0.0.1/api/replay?id="+id, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.insp.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
		})
	}
	if strings.Count(h.logs.String(), "msg=\"handler ran\" id=csrf-delivery") != 2 {
		t.Errorf("the handler ran other than twice (delivery, one replay):\n%s", h.logs)
	}
	// GET does not run an action.
	rec := httptest.NewRecorder()
	h.insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/replay?id="+id, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET replay: %d", rec.Code)
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	var redelivered []string
	h := newHarness(t, inspector.Options{Redeliver: func(_ context.Context, id string) error {
		redelivered = append(redelivered, id)
		return nil
	}})
	if code := h.post(t, "issues", "one", []byte(`{"action":"opened"}`), testSecret); code != 200 {
		t.Fatal(code)
	}
	token := csrfToken(t, h.insp)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/replay?id=one", 200},
		{"/api/retry?id=one", 409}, // handled: not a dead letter
		{"/api/redeliver?id=one", 200},
		{"/api/replay?id=missing", 404},
		{"/api/replay", 400},
	} {
		req := httptest.NewRequest("POST", "http://127.0.0.1"+tc.path, nil)
		req.Header.Set("X-CSRF-Token", token)
		rec := httptest.NewRecorder()
		h.insp.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.path, rec.Code, tc.want, rec.Body)
		}
	}
	if fmt.Sprint(redelivered) != "[one]" {
		t.Errorf("redelivered %v", redelivered)
	}
	// Without Redeliver the action is refused.
	plain := inspector.New(inspector.Options{})
	req := httptest.NewRequest("POST", "http://127.0.0.1/api/redeliver?id=one", nil)
	req.Header.Set("X-CSRF-Token", csrfToken(t, plain))
	rec := httptest.NewRecorder()
	plain.ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict {
		t.Errorf("redeliver without Redeliver: %d", rec.Code)
	}
}

func TestCSPReport(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{})
	for i, body := range []string{`{"csp-report":{"violated-directive":"script-src"}}`, ``} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/csp-report", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/csp-report")
		insp.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			t.Errorf("report %d: %d", i, rec.Code)
		}
	}
	if n := insp.CSPViolations(); n != 1 {
		t.Errorf("%d violations counted, want 1 (an empty body is no report)", n)
	}
	// From another site (a page elsewhere, in a browser on this machine):
	// refused, not counted.
	for _, h := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://evil.example"}, {"Origin", "http://127.0.0.1:9999"}} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/csp-report", strings.NewReader(`{"csp-report":{}}`))
		req.Header.Set(h[0], h[1])
		insp.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("report with %s: %s: %d, want 403", h[0], h[1], rec.Code)
		}
	}
	if n := insp.CSPViolations(); n != 1 {
		t.Errorf("%d violations counted after cross-site reports, want 1", n)
	}
}

// TestCSPReportLogRate: a flood of reports is counted, and logged at most
// once every 10 s.
func TestCSPReportLogRate(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	insp := inspector.New(inspector.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 1000 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://127.0.0.1/csp-report", strings.NewReader(`{"csp-report":{}}`))
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Origin", "http://127.0.0.1")
		insp.ServeHTTP(rec, req)
	}
	if n := insp.CSPViolations(); n != 1000 {
		t.Errorf("%d counted, want 1000", n)
	}
	if n := strings.Count(logs.String(), "Content-Security-Policy violation"); n != 1 {
		t.Errorf("%d log lines for 1000 reports within 10 s, want 1", n)
	}
}

type listPage struct {
	Rows []struct {
		Key, ID, Name, Event, Action, Status, StatusText, Repository, Sender string
		Verified                                                             bool
	}
	Next string
}

func getJSON(t *testing.T, h http.Handler, path string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, rec.Body)
		}
	}
	return rec.Code
}

// TestListPaging walks every page of a list that merges deliveries and
// rejected requests, under each filter, and checks each record comes once,
// newest first.
func TestListPaging(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string // newest last
	for i := range 23 {
		res := webhooks.Result{ID: fmt.Sprint("d", i), Name: "issues", Action: "opened", Status: 200, Verified: true,
			Payload: []byte(fmt.Sprintf(`{"action":"opened","sender":{"login":"user%d"}}`, i%4)), ReceivedAt: t0.Add(time.Duration(i) * time.Second)}
		switch {
		case i%5 == 0:
			res.Verified, res.Payload, res.Action, res.Status, res.Err = false, nil, "", 400, errors.New("signature does not match")
		case i%7 == 0:
			res.Name, res.Action, res.Payload = "push", "", []byte(`{"ref":"x"}`)
		case i%4 == 3:
			res.Status, res.Err = 500, errors.New("boom")
		}
		insp.OnResult(res)
		want = append(want, res.ID)
	}
	all := func(query string) []string {
		var ids []string
		before := ""
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatalf("%s: no end of pages", query)
			}
			var p listPage
			if code := getJSON(t, insp, "/api/deliveries?limit=4&"+query+"&before="+before, &p); code != 200 {
				t.Fatalf("%s: status %d", query, code)
			}
			for _, r := range p.Rows {
				ids = append(ids, r.ID)
			}
			if p.Next == "" {
				return ids
			}
			before = p.Next
		}
	}
	rev := func(ids []string, keep func(i int) bool) string {
		var out []string
		for i := len(ids) - 1; i >= 0; i-- {
			if keep(i) {
				out = append(out, ids[i])
			}
		}
		return strings.Join(out, ",")
	}
	rejected := func(i int) bool { return i%5 == 0 }
	push := func(i int) bool { return !rejected(i) && i%7 == 0 }
	failed := func(i int) bool { return !rejected(i) && !push(i) && i%4 == 3 }
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", rev(want, func(int) bool { return true })},
		{"status=rejected", rev(want, rejected)},
		{"status=failed", rev(want, failed)},
		{"status=handled", rev(want, func(i int) bool { return !rejected(i) && !failed(i) })},
		{"event=push", rev(want, push)},
		{"event=issues.opened", rev(want, func(i int) bool { return !rejected(i) && !push(i) })},
		{"name=push", rev(want, push)},
		{"name=issues.opened", rev(want, func(i int) bool { return !rejected(i) && !push(i) })},
		{"name=push&event=issues", rev(want, push)}, // name, when given, wins over its former name
		{"q=user1", rev(want, func(i int) bool { return !rejected(i) && !push(i) && i%4 == 1 })},
		{"q=REJECTED", rev(want, rejected)},
		{"q=nothing-matches", ""},
	} {
		if got := strings.Join(all(tc.query), ","); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
	// A row says its event name as "name", and as "event" for scripts that
	// read the former key.
	var p listPage
	if code := getJSON(t, insp, "/api/deliveries?limit=500", &p); code != 200 || len(p.Rows) == 0 {
		t.Fatalf("status %d, %d rows", code, len(p.Rows))
	}
	for _, r := range p.Rows {
		if r.Name == "" || r.Event != r.Name {
			t.Errorf("row %s: name %q, event %q", r.Key, r.Name, r.Event)
		}
	}
}

func TestDetail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, inspector.Options{})
	body := []byte(`{"action":"opened","issue":{"title":"t"},"repository":{"full_name":"o/r"},"sender":{"login":"u"}}` + "\n")
	req, _ := http.NewRequest("POST", h.hookURL, strings.NewReader(string(body)))
	sig, _ := h.wh.Sign(body)
	for k, v := range map[string]string{"Content-Type": "application/json", "X-Forge-Event": "issues", "X-Forge-Delivery": "it's-1",
		"X-Hub-Signature-256": sig, "Authorization": "Basic c2VjcmV0", "X-Api-Key": "k", "Cookie": "a=b", "X-Trace": "visible"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(err, resp.StatusCode)
	}
	resp.Body.Close()
	var d struct {
		Headers                   [][2]string
		TypeName, Send, Curl      string
		Payload                   string
		CanReplay, CanRetry       bool
		Repository, Sender, Event string
	}
	if code := getJSON(t, h.insp, "/api/delivery?key=d:it's-1", &d); code != 200 {
		t.Fatal(code)
	}
	got := map[string]string{}
	for _, kv := range d.Headers {
		got[kv[0]] = kv[1]
	}
	for _, k := range []string{"X-Hub-Signature-256", "Authorization", "X-Api-Key", "Cookie"} {
		if got[k] != "[redacted]" {
			t.Errorf("header %s shown as %q", k, got[k])
		}
	}
	if got["X-Trace"] != "visible" || got["X-Forge-Event"] != "issues" {
		t.Errorf("headers %v", got)
	}
	if d.TypeName != "*payloads.IssuesOpenedEvent" || d.Payload != string(body) || !d.CanReplay || d.CanRetry || d.Repository != "o/r" || d.Sender != "u" {
		t.Errorf("detail %+v", d)
	}
	if want := `--delivery 'it'\''s-1'`; !strings.Contains(d.Send, want) || !strings.Contains(d.Curl, `'X-Forge-Delivery: it'\''s-1'`) {
		t.Errorf("commands:\n%s\n%s", d.Send, d.Curl)
	}
	// The download is the body byte for byte.
	rec := httptest.NewRecorder()
	h.insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/payload?key=d:it's-1", nil))
	if rec.Body.String() != string(body) || !strings.Contains(rec.Header().Get("Content-Disposition"), "attachment") {
		t.Errorf("download %q", rec.Body)
	}
	for _, path := range []string{"/api/delivery?key=d:missing", "/api/delivery?key=r:99", "/api/payload?key=d:missing"} {
		if code := getJSON(t, h.insp, path, &d); code != 404 {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
}

func TestRejectedRingBounds(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{MaxRejected: 5})
	huge := strings.Repeat("x", 100<<10)
	hdr := http.Header{}
	for i := range 200 {
		hdr.Set(fmt.Sprint("X-H", i, huge), huge)
	}
	for i := range 50 {
		insp.OnResult(webhooks.Result{ID: huge, Name: huge, Status: 400, Header: hdr, Err: errors.New(huge)})
		_ = i
	}
	var st map[string]int64
	getJSON(t, insp, "/api/stats", &st)
	if st["requests"] != 5 {
		t.Errorf("%d rejected requests kept, want 5", st["requests"])
	}
	var p listPage
	getJSON(t, insp, "/api/deliveries?status=rejected", &p)
	if len(p.Rows) != 5 || len(p.Rows[0].ID) != 1<<10 {
		t.Fatalf("rows %d, id length %d", len(p.Rows), len(p.Rows[0].ID))
	}
	var d struct{ Headers [][2]string }
	getJSON(t, insp, "/api/delivery?key="+p.Rows[0].Key, &d)
	if len(d.Headers) > 64 {
		t.Errorf("%d headers kept", len(d.Headers))
	}
	for _, kv := range d.Headers {
		if len(kv[0]) > 1<<10 || len(kv[1]) > 1<<10 {
			t.Fatalf("header value of %d bytes kept", len(kv[1]))
		}
	}
}

func decodeJSON(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
