package catchup_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// Throttled and failing answers are waited out as the forge asks, on a
// virtual clock: the test checks the waits without taking them.
func TestCatchupRetries(t *testing.T) {
	t.Parallel()
	reset := func(e *env) string { return strconv.FormatInt(e.clock.Now().Add(7*time.Minute).Unix(), 10) }
	tests := []struct {
		name    string
		fault   func(e *env) forgetest.Fault
		slept   time.Duration // at least
		maxSlep time.Duration // at most
	}{
		{"429 Retry-After", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "GET", Status: 429, Header: http.Header{"Retry-After": {"30"}}, Body: `{"message":"Too Many Requests"}`}
		}, 30 * time.Second, 30 * time.Second},
		{"403 secondary limit with Retry-After", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "GET", Status: 403, Header: http.Header{"Retry-After": {"45"}}, Body: `{"message":"You have exceeded a secondary rate limit."}`}
		}, 45 * time.Second, 45 * time.Second},
		{"403 secondary limit without delay", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "GET", Status: 403, Body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, Times: 2}
		}, 3 * time.Minute, 3 * time.Minute}, // one minute, then two
		{"403 primary limit until reset", func(e *env) forgetest.Fault {
			return forgetest.Fault{Method: "GET", Status: 403, Header: http.Header{"X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {reset(e)}}, Body: `{"message":"API rate limit exceeded"}`}
		}, 7 * time.Minute, 7 * time.Minute},
		{"502 twice", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "GET", Status: 502, Body: `{"message":"Bad Gateway"}`, Times: 2}
		}, 3 * time.Second, 3 * time.Second}, // one second, then two
		{"503 with Retry-After", func(*env) forgetest.Fault {
			return forgetest.Fault{Status: 503, Header: http.Header{"Retry-After": {"120"}}, Body: `{}`}
		}, 2 * time.Minute, 2 * time.Minute},
		{"POST 500 then accepted", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "POST", Status: 500, Body: `{"message":"Server Error"}`}
		}, time.Second, time.Second},
		{"POST 429", func(*env) forgetest.Fault {
			return forgetest.Fault{Method: "POST", Status: 429, Header: http.Header{"Retry-After": {"60"}}, Body: `{}`}
		}, time.Minute, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, forgetest.Options{})
			missed := e.record(forgetest.AppHook, 2, 0)
			e.forge.Fail(tt.fault(e))
			rep, err := e.run(e.options())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Requested != len(missed) {
				t.Errorf("requested %d, want %d", rep.Requested, len(missed))
			}
			// the second redelivery is paced 750 ms after the first, unless
			// a wait between them took longer
			if s := e.clock.Slept() - pace(e); s < tt.slept || s > tt.maxSlep {
				t.Errorf("waited %v, want %v..%v", s, tt.slept, tt.maxSlep)
			}
		})
	}
}

// pace is the time spent pacing the redeliveries, found from the requests.
func pace(e *env) time.Duration {
	p := posts(e.forge)
	if len(p) < 2 {
		return 0
	}
	if gap := p[len(p)-1].At.Sub(p[len(p)-2].At); gap == time.Minute/catchup.DefaultRedeliveriesPerMinute {
		return gap
	}
	return 0
}

// A request that keeps failing is tried MaxTries times, then the run ends
// with ErrGaveUp, having requested nothing and kept its checkpoint.
func TestCatchupGivesUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault forgetest.Fault
		tries int
		want  string
	}{
		{"5xx forever", forgetest.Fault{Method: "GET", Status: 502, Body: `{}`, Times: 1000}, 4, "502 Bad Gateway"},
		{"429 forever", forgetest.Fault{Method: "GET", Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: `{}`, Times: 1000}, 4, "rate limited"},
		{"Retry-After beyond MaxWait", forgetest.Fault{Method: "GET", Status: 429, Header: http.Header{"Retry-After": {"3600"}}, Body: `{}`}, 1, "more than the 15m0s allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, forgetest.Options{})
			e.record(forgetest.AppHook, 2, 0)
			e.forge.Fail(tt.fault)
			o := e.options()
			o.MaxTries = 4
			_, err := e.run(o)
			if !errors.Is(err, catchup.ErrGaveUp) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrGaveUp mentioning %q", err, tt.want)
			}
			if n := len(e.forge.Requests()); n != tt.tries {
				t.Errorf("%d requests, want %d", n, tt.tries)
			}
			if len(posts(e.forge)) != 0 {
				t.Error("redeliveries were requested after the log could not be read")
			}
			if s, _ := e.state.Load(t.Context(), catchup.AppHook().Key()); !s.Through.IsZero() {
				t.Errorf("checkpoint advanced to %v", s.Through)
			}
		})
	}
}

// Redelivery requests are paced at RedeliveriesPerMinute: the fake forge
// enforces the secondary limit of 80 a minute and never has to throttle.
func TestCatchupPacing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	const n = 200
	e.clock.Advance(n * time.Minute) // so that the log window starts after start
	e.record(forgetest.AppHook, n, 0)
	o := e.options()
	o.Since = (n + 1) * time.Minute
	rep, err := e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != n {
		t.Fatalf("requested %d, want %d", rep.Requested, n)
	}
	if th := e.forge.Throttled(); th != 0 {
		t.Errorf("the forge throttled %d requests", th)
	}
	p := posts(e.forge)
	for i := range p {
		j := i
		for j < len(p) && p[j].At.Sub(p[i].At) < time.Minute {
			j++
		}
		if j-i > catchup.DefaultRedeliveriesPerMinute {
			t.Fatalf("%d redelivery requests within a minute from %v", j-i, p[i].At)
		}
	}
	if got, want := p[len(p)-1].At.Sub(p[0].At), (n-1)*time.Minute/catchup.DefaultRedeliveriesPerMinute; got != want {
		t.Errorf("redeliveries spread over %v, want %v", got, want)
	}
}

// Asked to go faster than the forge allows, catch-up meets its secondary
// limit and waits it out rather than failing or spinning.
func TestCatchupSecondaryLimitHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{SecondaryLimit: 10})
	e.clock.Advance(time.Hour)
	e.record(forgetest.AppHook, 25, 0)
	o := e.options()
	o.RedeliveriesPerMinute = 6000
	rep, err := e.run(o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != 25 {
		t.Errorf("requested %d, want 25", rep.Requested)
	}
	if th := e.forge.Throttled(); th == 0 || th > 4 {
		t.Errorf("the forge throttled %d requests, want 1..4 (one per full minute)", th)
	}
	if n := len(posts(e.forge)); n != 25+e.forge.Throttled() {
		t.Errorf("%d POSTs for 25 redeliveries and %d throttled", n, e.forge.Throttled())
	}
}

// With X-RateLimit-Remaining at 0, the next request waits for the reset
// instead of being refused.
func TestCatchupPrimaryLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{RateLimit: 3})
	e.clock.Advance(time.Hour)
	e.record(forgetest.AppHook, 5, 0) // 1 page + 5 POSTs: 6 requests, 3 an hour
	rep, err := e.run(func() catchup.Options { o := e.options(); o.MaxWait = 2 * time.Hour; return o }())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requested != 5 {
		t.Errorf("requested %d, want 5", rep.Requested)
	}
	if th := e.forge.Throttled(); th != 0 {
		t.Errorf("the forge refused %d requests; the client should have waited for the reset", th)
	}
	if s := e.clock.Slept(); s < time.Hour-time.Minute {
		t.Errorf("waited %v, want about an hour", s)
	}
}
