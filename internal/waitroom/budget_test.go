package waitroom

import (
	"testing"
	"time"
)

// TestBudgetShares, with the middleware's shares: large bodies hold at most
// three quarters of the budget together, so that small ones always find
// room; one client address holds at most half of it in growths past 64 KiB,
// so that other addresses do, and its own new deliveries start.
func TestBudgetShares(t *testing.T) {
	const max = 8 << 20 // large bodies: 6 MiB; one client: 4 MiB
	b := New(max, Shares{SmallBody: 1 << 20, KeptForSmall: max / 4, PerKey: max / 2, PerKeyFree: 64 << 10})
	a1 := b.Reserve("a", time.Time{})
	if !a1.Grow(3 << 20) {
		t.Fatal("a's first large body refused")
	}
	a2 := b.Reserve("a", time.Time{})
	if a2.Grow(2 << 20) {
		t.Error("a's second large body granted past a's half of the budget")
	}
	a3 := b.Reserve("a", time.Time{})
	if !a3.Grow(1 << 20) {
		t.Error("a's small body refused within a's half")
	}
	if a3.Grow(256 << 10) {
		t.Error("a's small body grown past a's half")
	}
	a4 := b.Reserve("a", time.Time{})
	if !a4.Grow(64 << 10) {
		t.Error("a's new body refused its first buffers with a's half taken")
	}
	a4.Release()
	bb := b.Reserve("b", time.Time{})
	if !bb.Grow(3 << 20) {
		t.Fatal("b's large body refused with 4 MiB free")
	}
	c1 := b.Reserve("c", time.Time{})
	if c1.Grow(2 << 20) {
		t.Error("a large body granted past the three quarters kept for large bodies")
	}
	// 1 MiB is left, for small bodies of other clients.
	for i, client := range []string{"c", "d"} {
		s := b.Reserve(client, time.Time{})
		if !s.Grow(500 << 10) {
			t.Errorf("small body %d from %s refused with %d bytes used of %d", i, client, b.Used(), max)
		}
		defer s.Release()
	}
	for _, r := range []*Reservation{&a1, &a2, &a3, &bb, &c1} {
		r.Release()
	}
	if b.Used() != 2*(500<<10) {
		t.Fatalf("used %d, want the small bodies' %d", b.Used(), 2*(500<<10))
	}
}

// TestBudgetWaits: a body that does not fit waits for room until its
// reservation's deadline, and is granted when bytes are given back.
func TestBudgetWaits(t *testing.T) {
	b := New(1<<20, Shares{})
	first := b.Reserve("a", time.Time{})
	first.Grow(1 << 20)
	second := b.Reserve("b", time.Now().Add(time.Minute))
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(50 * time.Millisecond)
		first.Release()
	}()
	start := time.Now()
	if !second.Grow(512 << 10) {
		t.Fatal("refused though room was made within its wait")
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Error("granted before room was made")
	}
	second.Release()
	<-released
	third := b.Reserve("c", time.Now().Add(50*time.Millisecond))
	first.Grow(1 << 20)
	if third.Grow(512 << 10) {
		t.Error("granted though no room was made")
	}
	first.Release()
}
