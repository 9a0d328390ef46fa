package relay

import (
	"math"
	"testing"
)

// TestBoundRule: with no bound on the back-off (a negative MaxBackoff),
// doubling does not overflow into a negative delay.
func TestBoundRule(t *testing.T) {
	for n := range 80 {
		if d := Backoff(n, DefaultRetry, math.MaxInt64/2, 0); d <= 0 {
			t.Fatalf("Backoff(%d) with no bound = %v", n, d)
		}
	}
}
