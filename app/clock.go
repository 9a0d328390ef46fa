package app

import (
	"context"
	"time"

	"forgehooks.dev/forgehooks/internal/clock"
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

type realClock = clock.Real
