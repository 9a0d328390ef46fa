package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// ErrNotWaiting is returned (wrapped) by Skip for a delivery that does not
// wait: handled, a dead letter already, running, or an unordered one not yet
// taken (it runs as soon as a worker is free).
var ErrNotWaiting = errors.New("inbox: the delivery does not wait")

// skipReason is the error of a dead letter set aside by Skip.
const skipReason = "inbox: set aside by an operator (forgehooks inbox skip); Retry runs it again"

// Skip sets aside a delivery that waits, so that what waits behind it goes
// on: one waiting for its retry, or an ordered one waiting at the head of
// its key (for its retry) or behind it. It becomes a dead letter at once,
// with the attempts it made; the later deliveries of its key then run. Retry
// runs it again later, at the end of its key's order. Skip is logged. It
// works on an Inbox that is not started (the command line's, on a stopped
// receiver's directory) as on a running one. Skip takes no lease: a runner
// that claims the delivery at that very moment (its retry falling due) may
// run it once more, and its status then says what that run did.
//
// The error wraps delivery.ErrNotFound when the inbox holds no delivery id,
// ErrNotWaiting when it does not wait.
func (in *Inbox) Skip(ctx context.Context, id string) error {
	if in.isClosed() {
		return ErrClosed
	}
	if id == "" {
		return errors.New("inbox: skip: empty delivery id")
	}
	token := stored.SubjectToken(id)
	if _, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token); err == nil {
		return fmt.Errorf("%w: %q is a dead letter already", ErrNotWaiting, id)
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("inbox: skip %q: %w", id, err)
	}
	m, err := in.lastStored(ctx, token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: %q", delivery.ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("inbox: skip %q: %w", id, err)
	}
	seq := m.Sequence
	key := stored.StatusKey(m.Header, token, seq)
	st := in.loadStatus(ctx, key)
	if st != nil && st.Seq == seq && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead) {
		return fmt.Errorf("%w: %q is %s", ErrNotWaiting, id, st.Status)
	}
	if in.isRunning(key) {
		return fmt.Errorf("%w: %q is running", ErrNotWaiting, id)
	}
	orderKey := m.Header.Get(stored.HeaderOrderKey)
	if orderKey != "" {
		var rec *runner.KeyRecord
		e, err := in.keyBucket.Get(ctx, runner.KeyName(orderKey))
		if err == nil {
			var r runner.KeyRecord
			if json.Unmarshal(e.Value(), &r) == nil {
				rec = &r
			}
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("inbox: skip %q: %w", id, err)
		}
		if rec != nil && rec.Head == seq && rec.Owner != "" && time.Now().Before(rec.Lease) && !in.embeddedOwnerGone(rec.Owner) {
			return fmt.Errorf("%w: %q is running", ErrNotWaiting, id)
		}
	} else if st == nil || st.Status != delivery.StatusRetrying {
		return fmt.Errorf("%w: %q is queued and runs as soon as a worker is free", ErrNotWaiting, id)
	}
	if st == nil {
		st = &stored.Status{}
	}
	st.Seq = seq
	if err := in.writeDead(ctx, m.Data, m.Header, token, key, st, skipReason); err != nil {
		return fmt.Errorf("inbox: skip %q: writing its dead letter: %w", id, err)
	}
	in.log.Warn("inbox: a waiting delivery set aside as a dead letter (skip)", "delivery", id, "event", m.Header.Get(stored.HeaderEvent),
		"order_key", orderKey, "attempts", len(st.Attempts))
	if orderKey != "" {
		in.dueNow(ctx, runner.KeyName(orderKey), seq, id)
	}
	return nil
}

// dueNow makes the record name due at once when its Head is seq and nobody
// runs it, so that a runner finds its Head dead (Skip) and moves on to the
// next; conditionally on the record's revision, read again when another
// write came between.
func (in *Inbox) dueNow(ctx context.Context, name string, seq uint64, id string) {
	for range 100 {
		e, err := in.keyBucket.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return
		}
		var r runner.KeyRecord
		if err == nil && json.Unmarshal(e.Value(), &r) != nil {
			return
		}
		if err != nil {
			in.log.Warn("inbox: skip: its key goes on once its retry falls due", "delivery", id, "error", err)
			return
		}
		if r.Head != seq || r.Owner != "" && time.Now().Before(r.Lease) && !in.embeddedOwnerGone(r.Owner) {
			return // parked behind another, or its runner finds it dead when done
		}
		r.Due, r.Owner, r.Lease = time.Now(), "", time.Time{}
		_, err = in.keyBucket.Update(ctx, name, r.Marshal(), e.Revision())
		if err == nil || !runner.IsWrongRevision(err) {
			if err != nil {
				in.log.Warn("inbox: skip: its key goes on once its retry falls due", "delivery", id, "error", err)
			}
			return
		}
	}
}

// embeddedOwnerGone reports whether the owner of a key's record is a
// process before this one on an embedded inbox's directory (the lock proves
// it gone): anything but the running runner of this Inbox.
func (in *Inbox) embeddedOwnerGone(owner string) bool {
	if in.ns == nil {
		return false
	}
	in.mu.Lock()
	r := in.started
	in.mu.Unlock()
	return r == nil || !r.Owns(owner)
}
