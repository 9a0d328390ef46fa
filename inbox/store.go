package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// storeWatch names why the store does not answer and, in the embedded mode,
// brings JetStream back after it stopped itself on a full disk (the server
// shuts JetStream down on ENOSPC and would otherwise stay so until a
// restart).
type storeWatch struct {
	ns         *server.Server // nil in cluster mode
	dir        string
	maxStore   int64
	log        *slog.Logger
	closing    <-chan struct{}
	recovering atomic.Bool
}

// The free space the disk must have before JetStream is started again:
// room for a few deliveries of the largest size (recoverFree), but never more
// than a quarter of the store's bound or an eighth of the disk, so that a
// small disk or store recovers too (a 64 MiB disk: 8 MiB), and never less
// than minRecoverFree.
const (
	recoverFree    = 4 * DefaultMaxPayload
	minRecoverFree = 1 << 20
)

// free returns the bytes free on the store's disk.
func (w *storeWatch) free() int64 {
	f, _ := w.space()
	return f
}

// needFree returns the free space the disk must have for the store to be
// started again (see recoverFree).
func (w *storeWatch) needFree() int64 {
	need := int64(recoverFree)
	if w.maxStore > 0 {
		need = min(need, w.maxStore/4)
	}
	if _, size := w.space(); size > 0 {
		need = min(need, size/8)
	}
	return max(need, minRecoverFree)
}

// explain wraps err, an error of the store, with its likely cause. In the
// embedded mode a JetStream that stopped itself is restarted once the disk
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
	if need := w.needFree(); !w.ns.JetStreamEnabled() || w.free() < need {
		// On a full disk JetStream either shuts itself down or keeps the
		// write error of the stream for good: either way it is restarted
		// once the disk has room again.
		w.recover()
		return fmt.Errorf("the embedded store has stopped: the disk of %s is full; it restarts once %.1f MiB are free: %w",
			w.dir, float64(need)/(1<<20), err)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the embedded store did not answer in time (the disk or the process overloaded?): %w", err)
	}
	return err
}

// recover starts, once, a goroutine that restarts JetStream when the disk
// has room.
func (w *storeWatch) recover() {
	if !w.recovering.CompareAndSwap(false, true) {
		return
	}
	w.log.Error("inbox: the embedded store stopped: the disk is full; deliveries are refused (503) until it restarts, which it does once the disk has room",
		"dir", w.dir, "needs_free_bytes", w.needFree())
	go func() {
		defer w.recovering.Store(false)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-w.closing:
				return
			case <-t.C:
			}
			if w.free() < w.needFree() {
				continue
			}
			if w.ns.JetStreamEnabled() {
				// Its streams keep their write error until they are loaded
				// again.
				if err := w.ns.ShutdownJetStream(); err != nil {
					w.log.Warn("inbox: stopping the embedded store to restart it", "error", err)
					continue
				}
			}
			cfg := &server.JetStreamConfig{StoreDir: w.dir, MaxStore: w.maxStore, MaxMemory: 256 << 20}
			if w.maxStore <= 0 {
				cfg.MaxStore = 0 // the server's own default
			}
			if err := w.ns.EnableJetStream(cfg); err != nil {
				w.log.Warn("inbox: restarting the embedded store", "error", err)
				continue
			}
			w.log.Info("inbox: the embedded store restarted; deliveries are taken again", "dir", w.dir)
			return
		}
	}()
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
