package forgetest

import (
	"context"
	"sync"
	"time"
)

// Clock is a virtual clock shared by a fake forge and the code under test:
// Sleep advances it at once instead of waiting, so that minutes of backoff and
// pacing take no real time while every wait still counts. It has the methods
// of catchup.Clock. The zero Clock starts at the zero time; use NewClock.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept time.Duration
}

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep advances the clock by d (if positive), unless ctx is already done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.advance(d, true)
	return nil
}

// Advance moves the clock forward by d, as time passing would; it does not
// count as slept.
func (c *Clock) Advance(d time.Duration) { c.advance(d, false) }

func (c *Clock) advance(d time.Duration, sleep bool) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	if sleep {
		c.slept += d
	}
}

// Slept returns the total of every Sleep.
func (c *Clock) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}
