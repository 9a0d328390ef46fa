package app

import (
	"context"
	"time"
)

// Clock is the time the package reads and waits on: token expiry, rate-limit
// waits and backoff. Tests pass a virtual one (forgetest.Clock has these
// methods); the zero Options use the real clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or returns ctx.Err() when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
