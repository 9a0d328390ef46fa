package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// maxRecoverScan bounds the stream sequences recoverLeases looks at, the
// newest (where the deliveries running at a crash are), so that Open stays
// quick; an older lease runs out on its own.
const maxRecoverScan = 20_000

// recoverLeases hands back at once the deliveries a consumer still counts
// as leased to the process that held the directory before this one, which
// the directory lock proves gone: without it they would wait for their
// lease (AckWait) to run out. A delivery waiting for its retry keeps its
// schedule (as its status has it); one whose retry is due runs at once. It only logs what it
// cannot do: the leases run out on their own all the same.
func (r *Runner) recoverLeases(ctx context.Context, cons jetstream.Consumer) {
	info, err := cons.Info(ctx)
	if err != nil {
		r.cfg.Logger.Warn("inbox: reading a consumer's leases", "error", err)
		return
	}
	if info.NumAckPending == 0 {
		return
	}
	from, to := info.AckFloor.Stream+1, info.Delivered.Stream
	if to-from >= maxRecoverScan {
		from = to - maxRecoverScan + 1
	}
	// The server takes a nak for any consumer sequence above the ack floor
	// that it has handed out, and checks the stream sequence against its
	// leases: a sequence not leased is ignored.
	dseq := info.Delivered.Consumer
	prefix := fmt.Sprintf("$JS.ACK.%s.%s.1.", info.Stream, info.Name)
	start := time.Now()
	var handed, kept int
	for seq := from; seq <= to; seq++ {
		m, err := r.cfg.Inbox.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			r.cfg.Logger.Warn("inbox: reading a leased delivery", "seq", seq, "error", err)
			return
		}
		token := stored.TokenOf(m.Header, m.Subject)
		key := stored.StatusKey(m.Header, token, seq)
		if token != "n" && m.Header.Get(stored.HeaderKey) == "" {
			// Stored by a process that may have died before its dedupe
			// records were written (it answered 503 then).
			if err := r.cfg.Intake.RememberStored(ctx, seq); err != nil {
				r.cfg.Logger.Warn("inbox: recording a delivery stored before the restart", "seq", seq, "error", err)
			}
		}
		st := r.loadStatus(ctx, key)
		nak := "-NAK"
		if st != nil && st.Seq == seq {
			// Its status was written before its acknowledgement, which the
			// kill may have lost: settled now rather than after its lease.
			switch st.Status {
			case delivery.StatusHandled:
				nak = "+ACK"
			case delivery.StatusDead:
				nak = "+TERM"
			}
		}
		if nak == "-NAK" && st != nil && st.Status == delivery.StatusRetrying && st.Seq == seq {
			// The server's own schedule of a retry may not have reached
			// the disk before the kill: it is given again.
			if wait := time.Until(r.retryDue(st, stored.Int(m.Header.Get(stored.HeaderBefore)))); wait > 0 {
				nak += " " + wait.String()
				kept++
			}
		}
		reply := fmt.Sprintf("%s%d.%d.%d.0", prefix, seq, dseq, time.Now().UnixNano())
		if err := r.cfg.Conn.Publish(reply, []byte(nak)); err != nil {
			r.cfg.Logger.Warn("inbox: handing back a leased delivery", "seq", seq, "error", err)
			return
		}
		handed++
	}
	if err := r.cfg.Conn.Flush(); err != nil {
		r.cfg.Logger.Warn("inbox: handing back leased deliveries", "error", err)
	}
	r.cfg.Logger.Info("inbox: deliveries leased before the restart handed back", "consumer", info.Name,
		"leased_or_waiting", info.NumAckPending, "handed_back", handed, "retries_rescheduled", kept, "took", time.Since(start))
}

// retryDue is when the retry of a delivery whose last attempt failed is
// scheduled: the end of that attempt plus the delay the schedule gives it.
// before counts the attempts of earlier copies (Retry, Replay).
func (r *Runner) retryDue(st *stored.Status, before int) time.Time {
	if len(st.Attempts) == 0 {
		return time.Time{}
	}
	a := st.Attempts[len(st.Attempts)-1]
	i := a.Number - before - 1
	if i < 0 || i >= len(r.cfg.RetryDelays) {
		return time.Time{}
	}
	return a.Start.Add(a.Duration).Add(r.cfg.RetryDelays[i])
}
