package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSleep: Sleep waits for its duration, and returns the context's error
// as soon as the context ends.
func TestSleep(t *testing.T) {
	var c Real
	start := c.Now()
	if err := c.Sleep(context.Background(), 10*time.Millisecond); err != nil || time.Since(start) < 10*time.Millisecond {
		t.Errorf("Sleep = %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep with an ended context = %v", err)
	}
}
