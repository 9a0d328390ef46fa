package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/embedded"
	"forgehooks.dev/forgehooks/inbox/internal/janitor"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
)

// storeWatch names why the store does not answer and, in the embedded mode,
// brings the store back after it stopped on a full disk (JetStream shuts
// itself down on ENOSPC, or keeps its streams' write errors, until its
// server starts again): the whole server restarts (restartStore), never
// JetStream alone on a server whose API still serves requests.
type storeWatch struct {
	ns  *embedded.Server // nil in cluster mode
	dir string
	// disk is set in the embedded mode.
	disk *embedded.Recovery
}

// explain wraps err, an error of the store, with its likely cause. In the
// embedded mode a store stopped on a full disk is restarted once the disk
// has room again.
func (w *storeWatch) explain(err error) error {
	if err == nil {
		return nil
	}
	if w.ns == nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			return fmt.Errorf("the NATS cluster did not answer in time (servers down, or the inbox stream without quorum?): %w", err)
		}
		return err
	}
	if !w.ns.JetStreamEnabled() || w.disk.Full() {
		w.disk.Start()
		return fmt.Errorf("the embedded store has stopped: the disk of %s is full; it restarts once %.1f MiB are free: %w",
			w.dir, float64(w.disk.NeedFree())/(1<<20), err)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the embedded store did not answer in time (the disk or the process overloaded?): %w", err)
	}
	return err
}

// errStoreDown is the error of a request not sent since the embedded
// store is stopped or restarting.
var errStoreDown = errors.New("the embedded store is stopped (a full disk) or restarting")

// down reports, in the embedded mode, whether the store is stopped (it
// starts the recovery then) or restarting: a request cannot be answered
// before the restart, and waiting for it would only hold the caller past
// the forge's timeout.
func (w *storeWatch) down() bool {
	if w.ns == nil {
		return false
	}
	if !w.ns.JetStreamEnabled() {
		w.disk.Start()
		return true
	}
	return w.disk.Recovering()
}

// awaitRestart reports, after err, a failed write that must not be lost (a
// status), whether it is worth one more try: in the embedded mode, once the
// store stopped on a full disk has restarted (it waits for that, within ctx
// and until Close).
func (w *storeWatch) awaitRestart(ctx context.Context, err error) bool {
	if w.ns == nil || ctx.Err() != nil {
		return false
	}
	_ = w.explain(err) // starts the recovery on a full disk
	return w.disk.Await(ctx)
}

// restartStore starts the embedded server again, whole, on the same
// directory; the connection reconnects by itself. The runner stops taking
// deliveries first, and its successor starts once its handlers have
// returned (runner.Handover): a delivery never runs twice at once, and the
// statuses the old handlers write land on the new server.
func (in *Inbox) restartStore() error {
	in.mu.Lock()
	old := in.started
	in.mu.Unlock()
	if old != nil {
		old.StopTaking()
	}
	if err := in.ns.Restart(); err != nil {
		return err
	}
	if old != nil {
		go old.Handover(in.runnerConfig, func(prev, next *runner.Runner) bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			if in.closed || in.started != prev {
				return false
			}
			in.started = next
			return true
		}, in.closing)
	}
	return nil
}

// startJanitor runs the janitor (package janitor) until Close.
func (in *Inbox) startJanitor() {
	j := &janitor.Janitor{Stream: in.inbox, Retention: in.opts.HandledRetention, Status: in.loadStatus, Log: in.log}
	go j.Run(in.closing)
}
