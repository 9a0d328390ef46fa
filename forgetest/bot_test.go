package forgetest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Every operation a bot calls is answered with its success, an answer that
// follows the description, for a request made of the smallest valid values
// (path parameters, required query parameters, the request body's required
// fields), and is recorded with its operation and credentials.
func TestEveryBotOperation(t *testing.T) {
	t.Parallel()
	s := New(t, Options{Token: "tenant-token", SecondaryLimit: -1})
	served := 0
	for _, r := range s.desc.routes {
		for method, op := range r.ops {
			if strings.Contains(r.template, "/deliveries") || strings.HasPrefix(r.template, "/app") {
				continue
			}
			t.Run(op.OperationID, func(t *testing.T) {
				violations := len(s.Violations())
				path := r.template
				for _, p := range op.Parameters {
					v := "x"
					switch {
					case p.Name == "path":
						v = "docs/README.md"
					case p.Name == "ref":
						v = "heads/main"
					case p.Schema != nil && p.Schema.Type == "integer":
						v = "1"
					}
					if p.In == "path" {
						path = strings.Replace(path, "{"+p.Name+"}", v, 1)
					} else if p.In == "query" && p.Required {
						path += "?" + p.Name + "=" + v // no operation here requires two
					}
				}
				var body []byte
				if op.RequestBody != nil {
					body, _ = json.Marshal(s.synthesize(op.RequestBody.Content["application/json"].Schema, time.Now()))
				}
				req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
				req.Header.Set("Authorization", "token tenant-token")
				req.Header.Set("User-Agent", "test")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				want, schema := successOf(op)
				if res.StatusCode != want {
					t.Errorf("%s %s with %s: %d %s, want %d", method, path, body, res.StatusCode, b, want)
				}
				if schema != nil && !json.Valid(b) {
					t.Errorf("the answer is not JSON: %q", b)
				}
				if v := s.Violations(); len(v) > violations {
					t.Fatalf("%s %s with %s: violations %q", method, path, body, v)
				}
				reqs := s.Requests()
				last := reqs[len(reqs)-1]
				if last.Operation != op.OperationID || last.Authorization != "token tenant-token" || last.Installation != 0 {
					t.Errorf("recorded %+v", last)
				}
			})
			served++
		}
	}
	if served < 60 {
		t.Errorf("%d operations tried, want every one a bot calls (at least 60)", served)
	}
}

// Whatever body a bot sends, the fake either refuses it as off the
// description (422, recorded as the bot's violation) or answers with a value
// of the operation's schema: what it echoes of a request never puts its own
// answer off the description.
func FuzzEcho(f *testing.F) {
	for _, seed := range []string{
		`{"labels":["bug"]}`, `["bug","triage"]`, `{"labels":[{"name":"bug"}]}`, `{"labels":[1]}`,
		`{"title":"t","body":null,"state":"closed","labels":["x"],"assignees":["a"]}`,
		`{"name":"lint","head_sha":"abc","status":"completed","conclusion":"success","output":{"title":"t","summary":"s"}}`,
		`{"state":"success","context":"ci","target_url":null}`, `{"ref":"refs/heads/x","sha":"abc"}`, `null`, `{}`,
	} {
		f.Add(seed)
	}
	s, err := Start(Options{Token: "t", SecondaryLimit: -1, RateLimit: 1 << 30, AllowViolations: true})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	paths := map[string]string{
		"issues/add-labels":          "POST /repos/o/r/issues/1/labels",
		"issues/set-labels":          "PUT /repos/o/r/issues/1/labels",
		"issues/update":              "PATCH /repos/o/r/issues/1",
		"checks/create":              "POST /repos/o/r/check-runs",
		"repos/create-commit-status": "POST /repos/o/r/statuses/abc",
		"git/create-ref":             "POST /repos/o/r/git/refs",
		"pulls/create-review":        "POST /repos/o/r/pulls/1/reviews",
	}
	f.Fuzz(func(t *testing.T, body string) {
		for id, mp := range paths {
			method, path, _ := strings.Cut(mp, " ")
			before := len(s.Violations())
			req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "token t")
			req.Header.Set("User-Agent", "fuzz")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			for _, v := range s.Violations()[before:] {
				if strings.Contains(v, "forgetest answered") {
					t.Fatalf("%s with %q: %s", id, body, v)
				}
			}
			if res.StatusCode != http.StatusUnprocessableEntity && (res.StatusCode < 200 || res.StatusCode > 299) {
				t.Fatalf("%s with %q: %d", id, body, res.StatusCode)
			}
		}
	})
}
