package catchup_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// Bad answers end the run with a clear error after bounded work, before any
// redelivery is requested, and the checkpoint stays where it was.
func TestCatchupBadInput(t *testing.T) {
	t.Parallel()
	page := func(body string) func(*forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
		return func(*forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			return func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != "GET" {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
				return true
			}
		}
	}
	item := `{"id":%d,"guid":"g-%d","delivered_at":"2026-03-14T11:59:00Z","redelivery":false,"duration":0.1,"status":"failed to connect","status_code":0,"event":"push","action":null,"installation_id":null,"repository_id":null}`
	tests := []struct {
		name      string
		intercept func(*forgetest.Server) func(http.ResponseWriter, *http.Request) bool
		opts      func(*catchup.Options)
		is        error
		want      string
		maxGets   int
	}{
		{name: "malformed JSON", intercept: page(`[{"id":1,`), want: "malformed response: delivery list: unexpected end of JSON input", maxGets: 1},
		{name: "not an array", intercept: page(`{"message":"hello"}`), want: "delivery list is not a JSON array", maxGets: 1},
		{name: "null item", intercept: page(`[null]`), want: "item 0: null instead of an object", maxGets: 1},
		{name: "missing fields", intercept: page(`[{"id":7,"delivered_at":"2026-03-14T11:59:00Z"}]`), want: "item 0: missing guid, status, status_code, event", maxGets: 1},
		{name: "wrong type", intercept: page(`[{"id":"7"}]`), want: "cannot unmarshal string", maxGets: 1},
		{name: "bad date", intercept: page(`[{"id":7,"guid":"g","delivered_at":"yesterday","status":"x","status_code":0,"event":"push"}]`), want: `delivered_at: parsing time "yesterday"`, maxGets: 1},
		{name: "link loop", intercept: func(s *forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			var n atomic.Int64
			return func(w http.ResponseWriter, r *http.Request) bool {
				i := n.Add(1)
				// page 1 → page 2 → page 1
				next := "/app/hook/deliveries?per_page=100&cursor=v1_2"
				if r.URL.Query().Get("cursor") == "v1_2" {
					next = "/app/hook/deliveries?per_page=100"
				}
				w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next))
				fmt.Fprintf(w, "["+item+"]", i, i)
				return true
			}
		}, is: catchup.ErrLinkLoop, maxGets: 2},
		{name: "cursor that never ends", intercept: func(s *forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			var n atomic.Int64
			return func(w http.ResponseWriter, r *http.Request) bool {
				i := n.Add(1)
				w.Header().Set("Link", fmt.Sprintf(`<%s/app/hook/deliveries?per_page=100&cursor=v1_%d>; rel="next"`, s.URL, i))
				fmt.Fprintf(w, "["+item+"]", i, i)
				return true
			}
		}, opts: func(o *catchup.Options) { o.MaxPages = 7 }, is: catchup.ErrPageCap, maxGets: 7},
		{name: "cursor that repeats a page", intercept: func(s *forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			var n atomic.Int64
			return func(w http.ResponseWriter, r *http.Request) bool {
				i := n.Add(1)
				w.Header().Set("Link", fmt.Sprintf(`<%s/app/hook/deliveries?per_page=100&cursor=v1_%d>; rel="next"`, s.URL, i))
				fmt.Fprintf(w, "["+item+"]", 1, 1)
				return true
			}
		}, want: "the log's cursor does not advance", maxGets: 2},
		{name: "next link to another host", intercept: func(s *forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			return func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Link", `<http://198.51.100.7/app/hook/deliveries?cursor=x>; rel="next"`)
				fmt.Fprintf(w, "["+item+"]", 1, 1)
				return true
			}
		}, want: "next link leads to http://198.51.100.7, not the API", maxGets: 1},
		{name: "malformed Link", intercept: func(s *forgetest.Server) func(http.ResponseWriter, *http.Request) bool {
			return func(w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Link", `https://x/; rel=next`)
				fmt.Fprintf(w, "["+item+"]", 1, 1)
				return true
			}
		}, want: "link header: want '<'", maxGets: 1},
		{name: "401 bad token", opts: func(o *catchup.Options) {
			o.Hook, o.Credentials = catchup.RepoHook("octo", "site", 7), catchup.Token("wrong")
		}, want: "401 Unauthorized: Bad credentials (check the app id and private key, or the token)", maxGets: 1},
		{name: "401 JWT of another app", opts: func(o *catchup.Options) {
			c, _ := catchup.NewAppJWT("999", testKey())
			o.Credentials = c
		}, want: "401 Unauthorized: JWT iss 999 is not app 424242", maxGets: 1},
		{name: "404 unknown hook", opts: func(o *catchup.Options) {
			o.Hook, o.Credentials = catchup.RepoHook("octo", "nope", 8), catchup.Token(testToken)
		}, want: "GET /repos/octo/nope/hooks/8/deliveries: 404 Not Found: Not Found (check the hook id", maxGets: 1},
		{name: "huge answer", intercept: page("[" + strings.Repeat(" ", 9<<20) + "]"), want: "answer over 8388608 bytes", maxGets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, forgetest.Options{})
			e.forge.AddHook(forgetest.RepoHook("octo", "site", 7))
			e.record(forgetest.AppHook, 3, 0)
			// a checkpoint from an earlier run, which must not move
			cp := catchup.State{Through: start.Add(-time.Hour)}
			if err := e.state.Save(t.Context(), catchup.AppHook().Key(), cp); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(e.state.Path)
			if tt.intercept != nil {
				e.forge.Intercept(tt.intercept(e.forge))
			}
			o := e.options()
			if tt.opts != nil {
				tt.opts(&o)
			}
			_, err := e.run(o)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
			if n := len(e.forge.Requests()); n > tt.maxGets {
				t.Errorf("%d requests, want at most %d", n, tt.maxGets)
			}
			if len(posts(e.forge)) != 0 {
				t.Error("a redelivery was requested")
			}
			if after, _ := os.ReadFile(e.state.Path); string(after) != string(before) {
				t.Errorf("state file changed:\n%s", after)
			}
		})
	}
}

// A failed redelivery request ends the run; the guids requested before it are
// remembered, the checkpoint stays, and the next run requests only the rest.
func TestCatchupStopsAtFailedRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	missed := e.record(forgetest.AppHook, 4, 0)
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: fmt.Sprintf("/deliveries/%d/attempts", missed[2].ID), Status: 401, Body: `{"message":"Bad credentials","documentation_url":"x"}`})
	rep, err := e.run(e.options())
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: Bad credentials") || !strings.Contains(err.Error(), "2 requested before it") {
		t.Fatalf("err = %v", err)
	}
	if rep.Requested != 2 {
		t.Errorf("requested %d, want 2", rep.Requested)
	}
	s, err := e.state.Load(t.Context(), catchup.AppHook().Key())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Through.IsZero() || len(s.Requested) != 2 {
		t.Errorf("state after the failure: through %v, %d requested; want zero and 2", s.Through, len(s.Requested))
	}
	rep, err = e.run(e.options())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != 2 || rep.Count(catchup.SkipRequested) != 2 {
		t.Errorf("second run requested %d, skipped %d as requested earlier; want 2 and 2", rep.Requested, rep.Count(catchup.SkipRequested))
	}
	if n := len(posts(e.forge)); n != 5 {
		t.Errorf("%d POSTs in all, want 5 (2, the refused one, 2)", n)
	}
}

// A redelivery the forge refuses for good (here 422, as for an attempt too
// old) does not hold up the others, nor the checkpoint, nor later runs.
func TestCatchupRefusedRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	missed := e.record(forgetest.AppHook, 3, 0)
	e.forge.Fail(forgetest.Fault{Method: "POST", Suffix: fmt.Sprintf("/deliveries/%d/attempts", missed[1].ID), Status: 422, Body: `{"message":"Validation Failed","documentation_url":"x","errors":[]}`})
	rep, err := e.run(e.options())
	if !errors.Is(err, catchup.ErrRefused) || !strings.Contains(err.Error(), missed[1].GUID) {
		t.Fatalf("err = %v, want ErrRefused naming %s", err, missed[1].GUID)
	}
	if rep.Requested != 2 || !strings.Contains(rep.Entries[1].Refused, "422 Unprocessable Entity: Validation Failed") {
		t.Errorf("requested %d, entry %+v", rep.Requested, rep.Entries[1])
	}
	if !rep.Through.Equal(missed[2].DeliveredAt) {
		t.Errorf("checkpoint %v, want %v", rep.Through, missed[2].DeliveredAt)
	}
	rep, err = e.run(e.options())
	if err != nil || rep.Requested != 0 || len(posts(e.forge)) != 3 {
		t.Errorf("second run: requested %d, err %v, %d POSTs in all; want 0, nil, 3", rep.Requested, err, len(posts(e.forge)))
	}
}

// A checkpoint bounds the pages read; --since further back than the
// checkpoint reads further; a gap beyond the forge's 3-day log is warned of.
func TestCatchupWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	e.clock.Advance(5 * 24 * time.Hour)
	for range 5 { // 5 pages of 100 attempts a minute apart, all delivered
		e.record(forgetest.AppHook, 100, 200)
		e.clock.Advance(100 * time.Minute)
	}
	// first run: the default 24 h covers all 5 pages
	rep, err := e.run(e.options())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pages != 5 || rep.Attempts != 500 || len(rep.Warnings) != 0 {
		t.Errorf("first run: %d pages, %d attempts, warnings %q; want 5, 500, none", rep.Pages, rep.Attempts, rep.Warnings)
	}
	// 30 more attempts since: the next run reads back to its checkpoint only
	e.record(forgetest.AppHook, 30, 200)
	rep, err = e.run(e.options())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pages != 1 || rep.Attempts > 30+int(catchup.Overlap/time.Minute)+1 {
		t.Errorf("run after the checkpoint: %d pages, %d attempts; want 1 page, about 30 attempts", rep.Pages, rep.Attempts)
	}
	o := e.options()
	o.Since = 4 * 24 * time.Hour
	o.DryRun = true
	rep, err = e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "keeps its delivery log for 72h0m0s") {
		t.Errorf("warnings %q, want one about the 3-day log", rep.Warnings)
	}
}

// A dry run decides and reports, but neither requests nor saves.
func TestCatchupDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	e.record(forgetest.AppHook, 3, 0)
	e.record(forgetest.AppHook, 2, 200)
	o := e.options()
	o.DryRun = true
	rep, err := e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(catchup.Redeliver) != 3 || rep.Count(catchup.SkipSucceeded) != 2 || rep.Requested != 0 {
		t.Errorf("decided %d redeliver, %d succeeded, requested %d; want 3, 2, 0", rep.Count(catchup.Redeliver), rep.Count(catchup.SkipSucceeded), rep.Requested)
	}
	if len(posts(e.forge)) != 0 {
		t.Error("a dry run requested a redelivery")
	}
	if _, err := os.Stat(e.state.Path); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote the state file (%v)", err)
	}
}

// A Holder that fails stops the run before anything is requested.
func TestCatchupHolderError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	e.record(forgetest.AppHook, 2, 0)
	o := e.options()
	o.Holder = failingHolder{}
	if _, err := e.run(o); err == nil || !strings.Contains(err.Error(), "inbox unavailable") {
		t.Fatalf("err = %v", err)
	}
	if len(posts(e.forge)) != 0 {
		t.Error("requested while the holder could not answer")
	}
}

type failingHolder struct{}

func (failingHolder) Holds(context.Context, string) (bool, error) {
	return false, errors.New("inbox unavailable")
}
