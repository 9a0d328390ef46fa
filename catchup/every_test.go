package catchup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// Every runs at once and then each interval; later runs do not request what
// earlier ones did, even without a state file; a failed run is reported and
// the next one goes on.
func TestCatchupEvery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, forgetest.Options{})
	e.record(forgetest.AppHook, 2, 0)
	o := e.options()
	o.Checkpoints = nil
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		at        time.Time
		requested int
		err       error
	}
	var runs []result
	err := catchup.Every(ctx, 6*time.Hour, o, func(rep catchup.Report, err error) {
		runs = append(runs, result{e.clock.Now(), rep.Requested, err})
		switch len(runs) {
		case 1:
			e.record(forgetest.AppHook, 1, 0)
			e.forge.Fail(forgetest.Fault{Method: "GET", Status: 404, Body: `{"message":"Not Found"}`})
		case 3:
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Every returned %v, want context.Canceled", err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	if runs[0].requested != 2 || runs[0].err != nil {
		t.Errorf("first run: %+v", runs[0])
	}
	if runs[1].err == nil || runs[1].requested != 0 {
		t.Errorf("second run (404): %+v", runs[1])
	}
	if runs[2].requested != 1 || runs[2].err != nil {
		t.Errorf("third run: %+v, want the one new guid requested", runs[2])
	}
	if d := runs[1].at.Sub(runs[0].at); d < 6*time.Hour || d > 6*time.Hour+time.Minute {
		t.Errorf("runs %v apart, want 6h", d)
	}
}
