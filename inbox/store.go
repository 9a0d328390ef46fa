package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/embedded"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
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

// The janitor drops the stored copies of handled deliveries once they are
// older than HandledRetention, and of dead letters (which the dead-letter
// stream holds) and copies superseded by a Retry or Replay; it keeps those
// not finished. Their ids, digests and statuses stay in their buckets for
// the duplicate window, so dedupe does not depend on the copy.

// janitorEvery is how often the janitor looks, for a retention: a quarter of
// it, between a second and a minute.
func janitorEvery(retention time.Duration) time.Duration {
	return min(max(retention/4, time.Second), time.Minute)
}

// janitor is the state of the janitor's walk over the inbox stream.
type janitor struct {
	cursor  uint64            // first sequence not looked at yet
	waiting map[uint64]string // older than the retention, not finished: seq → status key
}

// startJanitor runs the janitor until Close.
func (in *Inbox) startJanitor() {
	j := &janitor{waiting: map[uint64]string{}}
	every := janitorEvery(in.opts.HandledRetention)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-in.closing:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			n, err := in.sweep(ctx, j)
			cancel()
			if err != nil && !in.isClosed() {
				in.log.Warn("inbox: dropping handled deliveries past their retention", "error", err)
			} else if n > 0 {
				in.log.Debug("inbox: dropped handled deliveries past their retention", "dropped", n)
			}
		}
	}()
}

// finished reports whether the copy at seq may go: its delivery was handled
// or is a dead letter, or a later copy replaced it.
func finished(st *stored.Status, seq uint64) bool {
	return st != nil && (st.Seq > seq || st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead)
}

// sweep drops the copies that may go, and returns how many it dropped.
func (in *Inbox) sweep(ctx context.Context, j *janitor) (int, error) {
	cutoff := time.Now().Add(-in.opts.HandledRetention)
	dropped := 0
	drop := func(seq uint64) error {
		err := in.inbox.DeleteMsg(ctx, seq)
		if err == nil {
			dropped++
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) || err != nil && isNotFound(err) {
			return nil
		}
		return err
	}
	for seq, key := range j.waiting {
		if finished(in.loadStatus(ctx, key), seq) {
			if err := drop(seq); err != nil {
				return dropped, err
			}
			delete(j.waiting, seq)
		}
	}
	info, err := in.inbox.Info(ctx)
	if err != nil {
		return dropped, err
	}
	for seq := range j.waiting {
		if seq < info.State.FirstSeq {
			delete(j.waiting, seq) // aged out (MaxAge)
		}
	}
	j.cursor = max(j.cursor, info.State.FirstSeq)
	if info.State.Msgs == 0 || j.cursor > info.State.LastSeq {
		return dropped, nil
	}
	cons, err := in.inbox.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   j.cursor,
		HeadersOnly:   true,
	})
	if err != nil {
		return dropped, err
	}
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return dropped, err
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			seq := meta.Sequence.Stream
			if meta.Timestamp.After(cutoff) {
				return dropped, nil // the rest is younger
			}
			j.cursor = seq + 1
			h := msg.Headers()
			key := stored.StatusKey(h, stored.TokenOf(h, msg.Subject()), seq)
			if finished(in.loadStatus(ctx, key), seq) {
				if err := drop(seq); err != nil {
					return dropped, err
				}
			} else {
				j.waiting[seq] = key
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return dropped, err
		}
		if n == 0 || j.cursor > info.State.LastSeq {
			return dropped, nil
		}
	}
}

// isNotFound reports a delete of a message already gone.
func isNotFound(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound
}
