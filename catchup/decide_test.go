package catchup_test

import (
	"fmt"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// Per guid: any 2xx attempt means succeeded, whatever came after; otherwise
// the latest attempt is the one redelivered, once.
func TestCatchupDecisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	at := func(m int) time.Time { return start.Add(-time.Duration(m) * time.Minute) }
	rec := func(guid string, m, code int) forgetest.Attempt {
		return e.forge.Record(forgetest.AppHook, forgetest.Attempt{GUID: guid, DeliveredAt: at(m), Status: fmt.Sprint(code), StatusCode: code, Event: "push"}, []byte(`{}`))
	}
	rec("two-failures", 30, 0)
	latest := rec("two-failures", 20, 502)
	rec("success-then-failure", 25, 200)
	rec("success-then-failure", 15, 500)
	rec("redirect", 10, 301)
	rep, err := e.run(e.options())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]catchup.Decision{"two-failures": catchup.Redeliver, "success-then-failure": catchup.SkipSucceeded, "redirect": catchup.Redeliver}
	for _, en := range rep.Entries {
		if en.Decision != want[en.GUID] {
			t.Errorf("%s: %s, want %s", en.GUID, en.Decision, want[en.GUID])
		}
		if en.GUID == "two-failures" && (en.Latest.ID != latest.ID || en.Attempts != 2) {
			t.Errorf("two-failures: latest %d of %d attempts, want %d of 2", en.Latest.ID, en.Attempts, latest.ID)
		}
	}
	p := posts(e.forge)
	if len(p) != 2 || p[0].Path != fmt.Sprintf("/app/hook/deliveries/%d/attempts", latest.ID) {
		t.Errorf("redelivery requests %+v, want the latest attempt of two-failures first", p)
	}
}
