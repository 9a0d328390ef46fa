// Package clock is the real clock behind the Clock interfaces of packages
// app and catchup, which take one so that tests can pass a virtual clock.
package clock

import (
	"context"
	"time"
)

// Real reads and waits on the system's time.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Sleep waits for d, or returns ctx.Err() when ctx ends first.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
