package quota

import (
	"errors"
	"testing"
)

// TestQuota: reservations, stored and released deliveries, a delivery
// released twice, and a count from the store that meets deliveries stored
// and released while it ran.
func TestQuota(t *testing.T) {
	q := New(100)
	if !q.Reserve("a", 60) || q.Reserve("a", 41) || !q.Reserve("b", 100) {
		t.Fatal("reservations: want 60 of a, no 41 more, 100 of b")
	}
	q.Stored(1, "a", 60)
	q.Unreserve("b", 100)
	if got := q.UsedBy("b"); got != 0 {
		t.Errorf("b after Unreserve: %d", got)
	}
	q.Release(1)
	q.Release(1) // ended twice (run again after a crash): released once
	if got := q.UsedBy("a"); got != 0 {
		t.Errorf("a after Release: %d", got)
	}
	q.Add(2, "a", 10)
	q.Add(2, "a", 10) // counted once per sequence
	if got := q.UsedBy("a"); got != 10 {
		t.Errorf("a after Add twice: %d, want 10", got)
	}

	// A count up to sequence 5 finds 2 and 3; meanwhile 3 ends, 7 is
	// stored, and a reservation of 5 bytes is under way.
	q.BeginCount()
	q.Release(3)
	q.Add(7, "a", 20)
	if !q.Reserve("a", 5) {
		t.Fatal("reservation refused")
	}
	q.EndCount(map[uint64]Entry{2: {"a", 10}, 3: {"a", 30}}, 5)
	if got := q.UsedBy("a"); got != 10+20+5 {
		t.Errorf("a after the count: %d, want 35 (2, 7 and the reservation; 3 ended)", got)
	}
	// A failed count changes nothing.
	q.BeginCount()
	q.EndCount(nil, 9)
	if got := q.UsedBy("a"); got != 35 {
		t.Errorf("a after a failed count: %d, want 35", got)
	}
}

// TestCountOnce: the first count runs until it succeeds, then never again.
func TestCountOnce(t *testing.T) {
	q := New(1)
	runs := 0
	fail := errors.New("no")
	if first, err := q.CountOnce(func() error { runs++; return fail }); first || !errors.Is(err, fail) {
		t.Fatalf("failing count: %v %v", first, err)
	}
	for i, want := range []bool{true, false} {
		if first, err := q.CountOnce(func() error { runs++; return nil }); first != want || err != nil {
			t.Fatalf("count %d: first %v, %v", i, first, err)
		}
	}
	if runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}
}
