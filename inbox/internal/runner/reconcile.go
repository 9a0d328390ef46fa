package runner

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// reconcileWindow bounds the settled sequences a start looks at, the
// newest below the consumers' acknowledgement floors (shared among them).
const reconcileWindow = 20_000

// reconcileStatuses sets right, in the background after a start, the
// statuses that can no longer change by themselves: a copy the consumer
// counts as settled (at or below its acknowledgement floor: acknowledged,
// or ended as a dead letter) whose status says queued, running or retrying
// for that copy, or that has none — a write lost before statuses were
// written ahead of acknowledgements. It becomes dead when the dead letters
// hold that copy, handled otherwise.
func (r *Runner) reconcileStatuses(ctx context.Context, consumers []jetstream.Consumer) {
	start := time.Now()
	fixed, read := 0, 0
	window := uint64(max(reconcileWindow/len(consumers), 1000))
	for _, c := range consumers {
		info, err := c.Info(ctx)
		if err != nil {
			r.cfg.Logger.Warn("inbox: reconciling statuses", "error", err)
			return
		}
		floor := info.AckFloor.Stream
		if floor == 0 {
			continue
		}
		from := uint64(1)
		if floor > window {
			from = floor - window + 1
		}
		subjects := info.Config.FilterSubjects
		if info.Config.FilterSubject != "" {
			subjects = []string{info.Config.FilterSubject}
		}
		n, nr, err := r.reconcileRange(ctx, subjects, from, floor)
		fixed, read = fixed+n, read+nr
		if err != nil && ctx.Err() != nil {
			r.cfg.Logger.Info("inbox: reconciling statuses stopped by Close; the next start goes on", "fixed", fixed, "read", read)
			return
		}
		if err != nil {
			r.cfg.Logger.Warn("inbox: reconciling statuses", "consumer", info.Name, "error", err)
			return
		}
	}
	if fixed > 0 {
		r.cfg.Logger.Info("inbox: statuses of settled deliveries set right", "fixed", fixed, "read", read, "took", time.Since(start))
	}
}

// reconcileRange reconciles the copies from from to to on subjects (all
// when none); it returns how many it fixed and read.
func (r *Runner) reconcileRange(ctx context.Context, subjects []string, from, to uint64) (fixed, read int, err error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from, HeadersOnly: true,
		FilterSubjects: subjects}
	cons, err := r.cfg.Inbox.OrderedConsumer(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	for {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return fixed, read, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			seq := md.Sequence.Stream
			if seq > to {
				return fixed, read, nil
			}
			read++
			ok, err := r.reconcileOne(ctx, m.Headers(), m.Subject(), seq)
			if err != nil {
				return fixed, read, err
			}
			if ok {
				fixed++
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fixed, read, err
		}
		if n == 0 {
			return fixed, read, nil
		}
	}
}

// reconcileOne sets right the status of the settled copy at seq; true when
// it wrote one. A status it cannot read (ctx ended, the store busy) is an
// error, never taken for none: written over, the status would lose its
// attempts.
func (r *Runner) reconcileOne(ctx context.Context, h nats.Header, subject string, seq uint64) (bool, error) {
	if h == nil || h.Get(stored.HeaderVersion) != "1" {
		return false, nil
	}
	token := stored.TokenOf(h, subject)
	key := stored.StatusKey(h, token, seq)
	st, err := r.cfg.Intake.ReadStatus(ctx, key)
	if err != nil {
		return false, err
	}
	switch {
	case st == nil && h.Get(stored.HeaderKey) == "":
		st = &stored.Status{}
	case st == nil, st.Seq != seq:
		return false, nil // another copy's status (Retry, Replay)
	case st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead:
		return false, nil
	}
	if r.Runs(key) {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	st.Seq = seq
	st.Status = delivery.StatusHandled
	if r.cfg.Intake.IsDead(ctx, token, seq) {
		st.Status = delivery.StatusDead
	}
	return r.putStatus(ctx, key, st) == nil, nil
}
