package bound

import (
	"math"
	"testing"
	"time"
)

func TestValue(t *testing.T) {
	for _, tt := range []struct{ v, want int }{{0, 7}, {-1, math.MaxInt}, {-100, math.MaxInt}, {3, 3}} {
		if got := Value(tt.v, 7, math.MaxInt); got != tt.want {
			t.Errorf("Value(%d) = %d, want %d", tt.v, got, tt.want)
		}
	}
	if got := Value(-time.Second, time.Minute, math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("Value(-1s) = %v", got)
	}
	if got := Value(int64(0), 64<<20, math.MaxInt64); got != 64<<20 {
		t.Errorf("Value(0) = %v", got)
	}
}
