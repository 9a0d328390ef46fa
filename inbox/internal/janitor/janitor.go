// Package janitor drops the stored copies of handled deliveries once they
// are older than the inbox's HandledRetention, and of dead letters (which
// the dead-letter stream holds) and copies superseded by a Retry or Replay;
// it keeps those not finished. Their ids, digests and statuses stay in
// their buckets for the duplicate window, so dedupe does not depend on the
// copy.
package janitor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// Janitor walks the inbox stream. Set the exported fields before Run; its
// walk's state is its own, so one Janitor serves one stream.
type Janitor struct {
	// Stream is the inbox stream.
	Stream jetstream.Stream
	// Retention is how long a finished copy is kept.
	Retention time.Duration
	// Status reads a delivery's status by its key: nil when it has none or
	// it cannot be read (the copy then stays until a later walk).
	Status func(ctx context.Context, key string) *stored.Status
	// Log receives a line when a walk fails.
	Log *slog.Logger

	cursor  uint64            // first sequence not looked at yet
	waiting map[uint64]string // older than the retention, not finished: seq → status key
}

// Every is how often the janitor looks, for a retention: a quarter of it,
// between a second and a minute.
func Every(retention time.Duration) time.Duration {
	return min(max(retention/4, time.Second), time.Minute)
}

// Run walks the stream every Every(Retention) until closing is closed.
func (j *Janitor) Run(closing <-chan struct{}) {
	t := time.NewTicker(Every(j.Retention))
	defer t.Stop()
	for {
		select {
		case <-closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n, err := j.Sweep(ctx)
		cancel()
		select {
		case <-closing:
			return
		default:
		}
		if err != nil {
			j.Log.Warn("inbox: dropping handled deliveries past their retention", "error", err)
		} else if n > 0 {
			j.Log.Debug("inbox: dropped handled deliveries past their retention", "dropped", n)
		}
	}
}

// finished reports whether the copy at seq may go: its delivery was handled
// or is a dead letter, or a later copy replaced it.
func finished(st *stored.Status, seq uint64) bool {
	return st != nil && (st.Seq > seq || st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead)
}

// Sweep drops the copies that may go, and returns how many it dropped.
func (j *Janitor) Sweep(ctx context.Context) (int, error) {
	if j.waiting == nil {
		j.waiting = map[uint64]string{}
	}
	cutoff := time.Now().Add(-j.Retention)
	dropped := 0
	drop := func(seq uint64) error {
		err := j.Stream.DeleteMsg(ctx, seq)
		if err == nil {
			dropped++
		}
		if errors.Is(err, jetstream.ErrMsgNotFound) || err != nil && isNotFound(err) {
			return nil
		}
		return err
	}
	for seq, key := range j.waiting {
		if finished(j.Status(ctx, key), seq) {
			if err := drop(seq); err != nil {
				return dropped, err
			}
			delete(j.waiting, seq)
		}
	}
	info, err := j.Stream.Info(ctx)
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
	cons, err := j.Stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
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
			if finished(j.Status(ctx, key), seq) {
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
