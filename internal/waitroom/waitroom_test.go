package waitroom

import (
	"sync"
	"testing"
	"time"
)

// TestUntil: a try that fails waits for a Broadcast, then succeeds; one that
// keeps failing gives up at its deadline; a zero deadline tries once.
func TestUntil(t *testing.T) {
	var (
		mu   sync.Mutex
		sig  Signal
		free int
	)
	try := func() (bool, <-chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		if free > 0 {
			free--
			return true, nil
		}
		return false, sig.Wait()
	}
	tries := 0
	counted := func() (bool, <-chan struct{}) { tries++; return try() }
	if Until(time.Time{}, counted) || tries != 1 {
		t.Fatalf("zero deadline: %d tries, want 1 and false", tries)
	}
	start := time.Now()
	if Until(start.Add(50*time.Millisecond), try) {
		t.Fatal("nothing was given back, yet Until reported true")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before its deadline", d)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		free++
		sig.Broadcast()
		mu.Unlock()
	}()
	if !Until(time.Now().Add(10*time.Second), try) {
		t.Fatal("a Broadcast with room did not let the waiter in")
	}
}
