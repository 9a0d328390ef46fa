package inbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// intake is the Inbox as its runner sees it (runner.Intake): the statuses,
// the dead letters and the watchers, all the intake's records.
type intake struct{ in *Inbox }

var _ runner.Intake = intake{}

// The methods are runner.Intake's; see there for their contracts.

func (i intake) ReadStatus(ctx context.Context, key string) (*stored.Status, error) {
	return i.in.readStatus(ctx, key)
}

func (i intake) PutStatuses(ctx context.Context, sts ...runner.KeyedStatus) error {
	return i.in.putStatuses(ctx, sts...)
}

func (i intake) Bury(ctx context.Context, data []byte, h nats.Header, token, key string, st *stored.Status, reason string) error {
	return i.in.writeDead(ctx, data, h, token, key, st, reason)
}

func (i intake) IsDead(ctx context.Context, token string, seq uint64) bool {
	dm, err := i.in.dead.GetLastMsgForSubject(ctx, i.in.deadSubj+token)
	return err == nil && dm.Header.Get(stored.HeaderSeq) == strconv.FormatUint(seq, 10)
}

func (i intake) RememberStored(ctx context.Context, seq uint64) error {
	return i.in.rememberStored(ctx, seq)
}

func (i intake) Changed(h nats.Header, data []byte, seq uint64, st *stored.Status) {
	i.in.changed(h, data, seq, st)
}

// Check refuses what is not a delivery the inbox wrote (see check).
func (i intake) Check(h nats.Header, data []byte) (runner.Checked, error) {
	return i.in.check(h, data)
}

// loadStatus reads a status; nil when there is none (or it cannot be read:
// the status is a record of what happened, the delivery itself is in the
// stream).
func (in *Inbox) loadStatus(ctx context.Context, key string) *stored.Status {
	st, err := in.readStatus(ctx, key)
	if err != nil {
		in.log.Warn("inbox: reading a delivery's status", "key", key, "error", err)
	}
	return st
}

// writeDead writes the dead letter of the stored copy st.Seq of a delivery,
// with its last error, then its status (dead). It returns an error when
// either write failed: the caller leaves the delivery in the inbox then.
func (in *Inbox) writeDead(ctx context.Context, data []byte, h nats.Header, token, key string, st *stored.Status, lastErr string) error {
	st.Status = delivery.StatusDead
	dm := &nats.Msg{Subject: in.deadSubj + token, Data: data, Header: make(nats.Header, len(h)+4)}
	for k, v := range h {
		if !strings.HasPrefix(strings.ToLower(k), "nats-") {
			dm.Header[k] = v
		}
	}
	dm.Header.Set(stored.HeaderKey, key)
	dm.Header.Set(stored.HeaderSeq, strconv.FormatUint(st.Seq, 10))
	dm.Header.Set(stored.HeaderError, stored.FirstLine(lastErr))
	dm.Header.Set(stored.HeaderAttempts, string(st.Marshal()))
	if in.key != nil && stored.CheckSeal(in.key, h, data) == nil {
		// Sealed only when the copy was: a refused message stays refused.
		in.seal(dm)
	}
	// The id makes a second bury of the same copy (after a crash between the
	// two writes) a no-op.
	if _, err := in.js.PublishMsg(ctx, dm, jetstream.WithMsgID("dead."+key+"."+strconv.FormatUint(st.Seq, 10))); err != nil {
		return err
	}
	if err := in.putStatus(ctx, key, st); err != nil {
		// Ended without its status, it would list as running for good: the
		// caller leaves it in the inbox, it runs again later and is buried
		// then (the dead letter's id keeps it one).
		return fmt.Errorf("the dead letter's status: %w", err)
	}
	in.changed(h, data, st.Seq, st)
	return nil
}

// changed tells the watchers.
func (in *Inbox) changed(h nats.Header, data []byte, seq uint64, st *stored.Status) {
	if in.watchers.Active() {
		in.notify(stored.Record(h, nil, len(data), seq, st))
	}
}

// readStatus reads a status: nil and no error when there is none (or it
// is not a status), nil and the error when it cannot be read, which a
// caller that writes statuses must not take for none.
func (in *Inbox) readStatus(ctx context.Context, key string) (*stored.Status, error) {
	v, err := in.status.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return stored.ParseStatus(v), nil
}

// putStatus writes a status and waits for the store's answer (see
// putStatuses).
func (in *Inbox) putStatus(ctx context.Context, key string, st *stored.Status) error {
	return in.putStatuses(ctx, runner.KeyedStatus{Key: key, Status: st})
}

// putStatuses writes statuses together (one record in the embedded mode)
// and waits for the store's answer, waiting out what publishRetrying waits
// out and, in the embedded mode, a restart of the store after a full disk;
// a failure is logged and returned.
func (in *Inbox) putStatuses(ctx context.Context, sts ...runner.KeyedStatus) error {
	entries := make([]recstore.Entry, len(sts))
	for i, s := range sts {
		entries[i] = recstore.Entry{Key: s.Key, Value: s.Status.Marshal()}
	}
	put := func(ctx context.Context) error { return in.status.PutWaitEach(ctx, entries...) }
	err := in.retrying(ctx, put)
	if err != nil && in.store.awaitRestart(ctx, err) {
		// Written after the store restarted (a full disk): lost, the
		// delivery would run again.
		err = in.retrying(ctx, put)
	}
	for _, s := range sts {
		if err != nil {
			in.log.Warn("inbox: writing a delivery's status", "key", s.Key, "status", s.Status.Status, "error", err)
		} else if in.quota != nil && (s.Status.Status == delivery.StatusHandled || s.Status.Status == delivery.StatusDead) {
			in.quota.Release(s.Status.Seq)
		}
	}
	return err
}

// isRunning reports whether the handlers of the delivery with status key
// key run in this process.
func (in *Inbox) isRunning(key string) bool {
	in.mu.Lock()
	r := in.started
	in.mu.Unlock()
	return r != nil && r.Runs(key)
}
