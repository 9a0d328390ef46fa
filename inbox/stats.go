package inbox

import (
	"context"
	"fmt"
	"time"

	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// Stats is what a metrics scrape reads of an inbox.
type Stats struct {
	// Waiting counts the stored deliveries not finished: not yet taken,
	// running, or waiting for a retry.
	Waiting int64
	// Dead counts the dead letters.
	Dead int64
	// OldestWaiting is when the oldest delivery still waiting was stored;
	// zero when none waits.
	OldestWaiting time.Time
}

// Stats reads the workers' backlog and the dead letters from the server (a
// delivery's headers at most, never a payload).
func (in *Inbox) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	if in.isClosed() {
		return s, ErrClosed
	}
	di, err := in.dead.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("inbox: stats: %w", err)
	}
	s.Dead = int64(di.State.Msgs)
	// The workers' consumer and the tenants' own (package overflow).
	waiting, floor, err := runner.Backlog(ctx, in.inbox, in.opts.Name)
	if err != nil {
		return s, fmt.Errorf("inbox: stats: %w", err)
	}
	if s.Waiting = waiting; s.Waiting == 0 {
		return s, nil
	}
	// Every delivery up to the ack floor is finished; the first stored after
	// it is the oldest waiting.
	from := floor + 1
	msgs, err := in.headers(ctx, in.inbox, from, from+63)
	if err != nil {
		return s, fmt.Errorf("inbox: stats: %w", err)
	}
	if len(msgs) > 0 {
		s.OldestWaiting, _ = time.Parse(time.RFC3339Nano, msgs[0].header.Get(stored.HeaderReceivedAt))
	}
	return s, nil
}
