package relay

import (
	"math"
	"testing"
	"time"
)

// TestBoundRule: zero is the default, negative no bound; with no bound on
// the back-off, doubling does not overflow into a negative delay.
func TestBoundRule(t *testing.T) {
	for _, tt := range []struct{ v, want time.Duration }{{0, DefaultIdleTimeout}, {-1, math.MaxInt64}, {time.Second, time.Second}} {
		if got := bound(tt.v, DefaultIdleTimeout, math.MaxInt64); got != tt.want {
			t.Errorf("bound(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	for n := range 80 {
		if d := Backoff(n, DefaultRetry, math.MaxInt64/2, 0); d <= 0 {
			t.Fatalf("Backoff(%d) with no bound = %v", n, d)
		}
	}
}
