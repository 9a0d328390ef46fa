package catchup

import (
	"context"
	"time"
)

// Every runs catch-up once at once, then every interval, until ctx ends, and
// gives each run's report and error to report (which may be nil). It is meant
// for a receiver that catches up in the background: a run that fails is
// reported and the next one tries again. Without opts.Checkpoints, the runs
// share a MemoryCheckpoints, so that no run requests what an earlier one did.
// Waits use opts.Clock. It returns ctx's error.
func Every(ctx context.Context, interval time.Duration, opts Options, report func(Report, error)) error {
	if opts.Checkpoints == nil {
		opts.Checkpoints = &MemoryCheckpoints{}
	}
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	for {
		rep, err := Run(ctx, opts)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if report != nil {
			report(rep, err)
		}
		if err := clock.Sleep(ctx, interval); err != nil {
			return err
		}
	}
}
