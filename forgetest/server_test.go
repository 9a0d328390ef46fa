package forgetest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/signing"
)

const token = "fake-token"

func get(t *testing.T, method, u string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func auth() http.Header {
	return http.Header{"Authorization": {"Bearer " + token}, "User-Agent": {"test"}}
}

// Requests off the description are answered with an error and recorded.
func TestViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		header       http.Header
		status       int
		violation    string
	}{
		{"GET", "/repos/o/r/hooks/1/deliveries?per_page=100", auth(), 200, ""},
		{"GET", "/repos/o/r/hooks/1/deliveries?page=2", auth(), 422, `query parameter "page" is not in the description`},
		{"GET", "/repos/o/r/hooks/1/deliveries?per_page=101", auth(), 422, "per_page 101 is not in 1..100"},
		{"GET", "/repos/o/r/hooks/1/deliveries?per_page=ten", auth(), 422, `"ten" is not an integer`},
		{"GET", "/repos/o/r/hooks/1/deliveries?status=ok", auth(), 422, `"ok" is not one of [success failure]`},
		{"GET", "/repos/o/r/hooks/1/deliveries?cursor=a&cursor=b", auth(), 422, `"cursor" given 2 times`},
		{"GET", "/repos/o/r/hooks/x/deliveries", auth(), 422, `path parameter "hook_id": "x" is not an integer`},
		{"DELETE", "/repos/o/r/hooks/1/deliveries", auth(), 404, "no DELETE operation"},
		{"GET", "/repos/o/r/hooks/1/deliverie", auth(), 404, "no such path"},
		{"POST", "/repos/o/r/hooks/1/deliveries/5/attempts?x=1", auth(), 422, `query parameter "x"`},
		{"GET", "/repos/o/r/hooks/1/deliveries", http.Header{"Authorization": {"Bearer " + token}, "User-Agent": {""}}, 403, "no User-Agent"},
		{"GET", "/repos/o/r/hooks/1/deliveries", http.Header{"Authorization": {"Bearer"}, "User-Agent": {"t"}}, 401, "is not \"<scheme> <credentials>\""},
		{"GET", "/repos/o/r/hooks/1/deliveries", http.Header{"User-Agent": {"t"}}, 401, ""},
		{"GET", "/repos/o/r/hooks/1/deliveries", http.Header{"Authorization": {"token " + token}, "User-Agent": {"t"}}, 200, ""},
		{"GET", "/repos/o/r/hooks/1/deliveries", http.Header{"Authorization": {"Basic " + token}, "User-Agent": {"t"}}, 401, ""},
		{"GET", "/app/hook/deliveries", auth(), 401, ""}, // a token where a JWT is due
		{"GET", "/orgs/o/hooks/1/deliveries", auth(), 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			s := forgetest.New(t, forgetest.Options{Token: token, AllowViolations: true})
			s.AddHook(forgetest.RepoHook("o", "r", 1))
			res, body := get(t, tt.method, s.URL+tt.path, tt.header)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			var e any
			if err := json.Unmarshal(body, &e); err != nil {
				t.Errorf("answer is not JSON: %s", body)
			}
			v := s.Violations()
			switch {
			case tt.violation == "" && len(v) > 0:
				t.Errorf("violations %q, want none", v)
			case tt.violation != "" && (len(v) != 1 || !strings.Contains(v[0], tt.violation)):
				t.Errorf("violations %q, want one with %q", v, tt.violation)
			}
		})
	}
}

// The cursor in the Link header walks the whole log newest first, each
// attempt once, and every page conforms to the description's schema.
func TestPaging(t *testing.T) {
	t.Parallel()
	clock := forgetest.NewClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	s := forgetest.New(t, forgetest.Options{Token: token, Now: clock.Now})
	key := forgetest.RepoHook("o", "r", 1)
	s.AddHook(key)
	for i := range 23 {
		s.Record(key, forgetest.Attempt{Event: "push", Status: "OK", StatusCode: 200 + 300*(i%2)}, []byte(`{}`))
		clock.Advance(time.Minute)
	}
	desc, _ := forgetest.ParseDescription()
	for _, tt := range []struct {
		query string
		items int
		pages int
	}{{"per_page=5", 23, 5}, {"", 23, 1}, {"per_page=5&status=success", 12, 3}, {"per_page=100&status=failure", 11, 1}} {
		next := s.URL + "/repos/o/r/hooks/1/deliveries?" + tt.query
		seen := map[float64]bool{}
		var last time.Time
		pages := 0
		for next != "" {
			res, body := get(t, "GET", next, auth())
			pages++
			var items []any
			if err := json.Unmarshal(body, &items); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if p := desc.Validate(&forgetest.Schema{Type: "array", Items: &forgetest.Schema{Ref: "#/components/schemas/hook-delivery-item"}}, items); len(p) > 0 {
				t.Errorf("page off the schema: %q", p)
			}
			for _, it := range items {
				m := it.(map[string]any)
				at, _ := time.Parse(time.RFC3339, m["delivered_at"].(string))
				if !last.IsZero() && at.After(last) {
					t.Errorf("not newest first")
				}
				last = at
				if seen[m["id"].(float64)] {
					t.Errorf("attempt %v twice", m["id"])
				}
				seen[m["id"].(float64)] = true
			}
			next = ""
			if l := res.Header.Get("Link"); l != "" {
				next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
				if u, err := url.Parse(next); err != nil || u.Query().Get("cursor") == "" {
					t.Fatalf("Link %q", l)
				}
			}
		}
		if len(seen) != tt.items || pages != tt.pages {
			t.Errorf("%q: %d attempts over %d pages, want %d over %d", tt.query, len(seen), pages, tt.items, tt.pages)
		}
	}
	if res, body := get(t, "GET", s.URL+"/repos/o/r/hooks/1/deliveries?cursor=v1_1", auth()); res.StatusCode != 422 {
		t.Errorf("unknown cursor: %d %s", res.StatusCode, body)
	}
}

// A redelivery POSTs the stored payload, signed, with the forge's headers,
// and logs a new attempt; the detail endpoint shows it.
func TestRedeliverPostsSigned(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		if len(got) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer recv.Close()
	s := forgetest.New(t, forgetest.Options{Token: token, Secret: secret, Receiver: recv.URL + "/hook"})
	key := forgetest.OrgHook("o", 3)
	s.AddHook(key)
	payload := []byte(`{"action":"created","x":1}`)
	first := s.Send(key, "star", payload)
	if first.StatusCode != 503 || first.Status != "Invalid HTTP Response: 503" || first.Action != "created" {
		t.Fatalf("first attempt %+v", first)
	}
	res, body := get(t, "POST", s.URL+"/orgs/o/hooks/3/deliveries/"+itoa(first.ID)+"/attempts", auth())
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("redeliver: %d %s", res.StatusCode, body)
	}
	log := s.Attempts(key)
	if len(log) != 2 || !log[1].Redelivery || log[1].GUID != first.GUID || log[1].StatusCode != 200 {
		t.Fatalf("log %+v", log)
	}
	for i, r := range got {
		if r.Header.Get("X-Forge-Event") != "star" || r.Header.Get("X-Forge-Delivery") != first.GUID || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d headers %v", i, r.Header)
		}
		if ok, err := signing.Verify(secret, bodies[i], r.Header.Get("X-Hub-Signature-256")); !ok || err != nil {
			t.Errorf("request %d: signature does not verify (%v)", i, err)
		}
		if string(bodies[i]) != string(payload) {
			t.Errorf("request %d body %s", i, bodies[i])
		}
	}
	res, body = get(t, "GET", s.URL+"/orgs/o/hooks/3/deliveries/"+itoa(log[1].ID), auth())
	var d map[string]any
	if res.StatusCode != 200 || json.Unmarshal(body, &d) != nil || d["guid"] != first.GUID || d["request"].(map[string]any)["payload"].(map[string]any)["x"] != 1.0 {
		t.Errorf("detail: %d %s", res.StatusCode, body)
	}
	if res, _ := get(t, "POST", s.URL+"/orgs/o/hooks/3/deliveries/999999/attempts", auth()); res.StatusCode != 404 {
		t.Errorf("redeliver of an unknown attempt: %d", res.StatusCode)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
