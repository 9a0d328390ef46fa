package runner

import (
	"log/slog"
	"testing"
	"time"
)

func TestPlaces(t *testing.T) {
	for _, tt := range []struct{ workers, partitions, want int }{
		{8, 16, 16},  // 2 CPUs, the defaults
		{64, 16, 64}, // 16 CPUs: the places scale with the workers
		{1, 1, 1},
		{0, 0, 1},
	} {
		if got := Places(tt.workers, tt.partitions); got != tt.want {
			t.Errorf("Places(%d, %d) = %d, want %d", tt.workers, tt.partitions, got, tt.want)
		}
	}
}

// TestPlaceOverdue: a delivery past HandlerTimeout gives its place back
// while the bound of overdue deliveries allows, and only then; its handlers'
// return counts it out of the bound; a key that gave its place back runs
// its next delivery at once only if it can take a free place again.
func TestPlaceOverdue(t *testing.T) {
	k := &keyRunner{r: &Runner{cfg: Config{HandlerTimeout: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}}, sem: make(chan struct{}, 2),
		maxOverdue: 1, kick: make(chan struct{}, 1)}
	take := func() *place {
		k.sem <- struct{}{}
		return &place{k: k, held: true}
	}
	p1, p2 := take(), take()
	stop1 := p1.watch("repository:1", 1)
	deadline := time.Now().Add(10 * time.Second)
	for k.overdue.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the overdue delivery kept its place")
		}
		time.Sleep(time.Millisecond)
	}
	p1.mu.Lock()
	held := p1.held
	p1.mu.Unlock()
	if k.overdue.Load() != 1 || held {
		t.Fatalf("overdue %d, held %v after the give-back", k.overdue.Load(), held)
	}
	p2.giveBack() // the bound (1) is reached: p2 keeps its place
	if !p2.held || len(k.sem) != 1 {
		t.Errorf("past the bound of overdue deliveries a place was given back")
	}
	if !p1.keep() || len(k.sem) != 2 {
		t.Fatal("a free place was not taken again")
	}
	stop1()
	if k.overdue.Load() != 0 {
		t.Errorf("overdue %d after the handlers returned, want 0", k.overdue.Load())
	}
	p2.giveBack() // now within the bound
	if p2.held || len(k.sem) != 1 {
		t.Errorf("within the bound a place was kept")
	}
	p3 := take() // another key takes the place given back
	if p2.keep() {
		t.Error("a key took a place while none was free")
	}
	p1.free()
	p3.free()
	p2.free()
	if len(k.sem) != 0 {
		t.Errorf("%d places held after all were freed", len(k.sem))
	}
}
