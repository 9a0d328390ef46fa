package inbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultListLimit is List's limit when ListOptions.Limit is zero.
const DefaultListLimit = 50

// ListOptions selects the records List returns.
type ListOptions struct {
	// Status, when set, keeps records with that status.
	Status string
	// Event, when set, keeps records of that event name.
	Event string
	// Before, when set, starts below that stream sequence (for paging: the
	// Seq of the last record of the previous page).
	Before uint64
	// Limit is the most records returned. Zero: DefaultListLimit.
	Limit int
}

// List returns stored deliveries, newest first, from the inbox stream (a
// dead letter whose stored copy aged out is in Dead only). A delivery stored
// again by Retry or Replay appears once, at its latest copy.
func (in *Inbox) List(ctx context.Context, o ListOptions) ([]Record, error) {
	if in.isClosed() {
		return nil, ErrClosed
	}
	if o.Limit <= 0 {
		o.Limit = DefaultListLimit
	}
	info, err := in.inbox.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("inbox: list: %w", err)
	}
	last, first := info.State.LastSeq, info.State.FirstSeq
	if o.Before > 0 && o.Before-1 < last {
		last = o.Before - 1
	}
	var out []Record
	for seq := last; seq >= first && seq > 0 && len(out) < o.Limit; seq-- {
		m, err := in.inbox.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("inbox: list: reading seq %d: %w", seq, err)
		}
		if o.Event != "" && m.Header.Get(hdrEvent) != o.Event {
			continue
		}
		r, ok := in.record(ctx, m)
		if !ok || (o.Status != "" && r.Status != o.Status) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// record builds the Record of a message of the inbox stream; false for an
// older copy of a delivery stored again.
func (in *Inbox) record(ctx context.Context, m *jetstream.RawStreamMsg) (Record, bool) {
	h := m.Header
	if h == nil {
		h = nats.Header{}
	}
	key := statusKey(h, lastToken(m.Subject), m.Sequence)
	st := in.loadStatus(ctx, key)
	if st != nil && st.Seq > m.Sequence {
		return Record{}, false
	}
	r := recordOf(h, m.Data, m.Sequence, st)
	if st != nil && st.Seq < m.Sequence {
		// Stored again, its status not written yet: this copy is queued.
		r.Status = StatusQueued
	}
	if in.isRunning(key) {
		r.Status = StatusRunning
	}
	return r, true
}

// Get returns the delivery with id: its latest stored copy with its status,
// or its dead letter. The error wraps ErrNotFound when the inbox holds none.
func (in *Inbox) Get(ctx context.Context, id string) (Record, error) {
	if in.isClosed() {
		return Record{}, ErrClosed
	}
	if id == "" {
		return Record{}, fmt.Errorf("inbox: get: empty delivery id")
	}
	token := subjectToken(id)
	if dm, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token); err == nil {
		return in.deadRecord(ctx, dm), nil
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, fmt.Errorf("inbox: get %q: %w", id, err)
	}
	m, err := in.inbox.GetLastMsgForSubject(ctx, in.inSubj+token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return Record{}, fmt.Errorf("inbox: get %q: %w", id, err)
	}
	r, _ := in.record(ctx, m)
	return r, nil
}

// deadRecord builds the Record of a dead letter.
func (in *Inbox) deadRecord(ctx context.Context, dm *jetstream.RawStreamMsg) Record {
	var st status
	if json.Unmarshal([]byte(dm.Header.Get(hdrAttempts)), &st) != nil {
		st = status{Attempts: []Attempt{{Err: dm.Header.Get(hdrError)}}}
	}
	st.Status = StatusDead
	seq, _ := strconv.ParseUint(dm.Header.Get(hdrSeq), 10, 64)
	if seq != 0 {
		// Seq is 0 once the stored copy aged out of the inbox stream.
		if _, err := in.inbox.GetMsg(ctx, seq); err != nil {
			seq = 0
		}
	}
	return recordOf(dm.Header, dm.Data, seq, &st)
}

// Dead returns the dead letters, newest first.
func (in *Inbox) Dead(ctx context.Context) ([]Record, error) {
	if in.isClosed() {
		return nil, ErrClosed
	}
	info, err := in.dead.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("inbox: dead letters: %w", err)
	}
	var out []Record
	for seq := info.State.LastSeq; seq >= info.State.FirstSeq && seq > 0; seq-- {
		dm, err := in.dead.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("inbox: dead letters: reading seq %d: %w", seq, err)
		}
		out = append(out, in.deadRecord(ctx, dm))
	}
	return out, nil
}

// Retry stores the dead letter of delivery id again, so that its handlers
// run again on a fresh retry schedule (attempt numbers go on), and removes
// it from the dead letters. The error wraps ErrNotDead when the delivery is
// not a dead letter, ErrNotFound when the inbox does not hold it.
func (in *Inbox) Retry(ctx context.Context, id string) error {
	if in.isClosed() {
		return ErrClosed
	}
	token := subjectToken(id)
	dm, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		if _, gerr := in.Get(ctx, id); gerr != nil {
			return gerr
		}
		return fmt.Errorf("%w: %q", ErrNotDead, id)
	}
	if err != nil {
		return fmt.Errorf("inbox: retry %q: %w", id, err)
	}
	r := in.deadRecord(ctx, dm)
	key := dm.Header.Get(hdrKey)
	if key == "" {
		key = token
	}
	if err := in.requeue(ctx, dm.Header, dm.Data, token, key, r.Attempts); err != nil {
		return fmt.Errorf("inbox: retry %q: %w", id, err)
	}
	if err := in.dead.DeleteMsg(ctx, dm.Sequence); err != nil {
		return fmt.Errorf("inbox: retry %q: stored again, but removing the dead letter failed: %w", id, err)
	}
	return nil
}

// Replay stores delivery id again so that its handlers run once more (a dead
// letter is retried). The error wraps ErrNotFound when the inbox does not
// hold it.
func (in *Inbox) Replay(ctx context.Context, id string) error {
	if in.isClosed() {
		return ErrClosed
	}
	if id == "" {
		return fmt.Errorf("inbox: replay: empty delivery id")
	}
	token := subjectToken(id)
	if _, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token); err == nil {
		return in.Retry(ctx, id)
	}
	m, err := in.inbox.GetLastMsgForSubject(ctx, in.inSubj+token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("inbox: replay %q: %w", id, err)
	}
	key := statusKey(m.Header, token, m.Sequence)
	var attempts []Attempt
	if st := in.loadStatus(ctx, key); st != nil {
		attempts = st.Attempts
	}
	if err := in.requeue(ctx, m.Header, m.Data, token, key, attempts); err != nil {
		return fmt.Errorf("inbox: replay %q: %w", id, err)
	}
	return nil
}

// requeue stores a delivery again under its status key, counting the
// attempts made so far.
func (in *Inbox) requeue(ctx context.Context, h nats.Header, data []byte, token, key string, attempts []Attempt) error {
	m := &nats.Msg{Subject: in.inSubj + token, Data: data, Header: make(nats.Header, len(h))}
	for k, v := range h {
		// Nats-* headers are the server's (a direct get adds the subject and
		// sequence it read): copied, they would mislead the next read.
		switch {
		case strings.HasPrefix(strings.ToLower(k), "nats-"):
			continue
		case k == hdrError || k == hdrAttempts || k == hdrSeq || k == hdrBefore || k == hdrKey:
			continue
		}
		m.Header[k] = v
	}
	before := 0
	if n := len(attempts); n > 0 {
		before = attempts[n-1].Number
	}
	m.Header.Set(hdrBefore, strconv.Itoa(before))
	m.Header.Set(hdrKey, key)
	// The status is written first: a worker may run the new copy, and write
	// its own, before this call could. Seq 0 stands for "the copy being
	// stored" (see record).
	old := in.loadStatus(ctx, key)
	st := &status{Status: StatusQueued, Attempts: attempts}
	if _, err := in.status.Put(ctx, key, st.marshal()); err != nil {
		return fmt.Errorf("writing its status: %w", err)
	}
	ack, err := in.js.PublishMsg(ctx, m)
	if err != nil {
		if old != nil {
			in.putStatus(ctx, key, old)
		}
		return in.describePublishError(err)
	}
	st.Seq = ack.Sequence
	in.changed(m.Header, data, ack.Sequence, st)
	return nil
}

// Holds reports whether the inbox holds a delivery with id, stored or dead
// (catch-up asks before having the forge redeliver it).
func (in *Inbox) Holds(ctx context.Context, id string) (bool, error) {
	if in.isClosed() {
		return false, ErrClosed
	}
	if id == "" {
		return false, nil
	}
	token := subjectToken(id)
	for _, s := range []struct {
		st   jetstream.Stream
		subj string
	}{{in.inbox, in.inSubj + token}, {in.dead, in.deadSubj + token}} {
		_, err := s.st.GetLastMsgForSubject(ctx, s.subj)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, fmt.Errorf("inbox: holds %q: %w", id, err)
		}
	}
	// A handled delivery whose stored copy was dropped (HandledRetention)
	// is still known for the duplicate window.
	if _, err := in.seen.Get(ctx, seenIDKey(token)); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, fmt.Errorf("inbox: holds %q: %w", id, err)
	}
	return false, nil
}

// GetState returns the value PutState stored under key, or nil (and no
// error) when there is none.
func (in *Inbox) GetState(ctx context.Context, key string) ([]byte, error) {
	if in.isClosed() {
		return nil, ErrClosed
	}
	e, err := in.state.Get(ctx, stateKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inbox: reading state %q: %w", key, err)
	}
	return e.Value(), nil
}

// PutState stores value under key, durably (as deliveries are), for
// GetState. Any string is a valid key.
func (in *Inbox) PutState(ctx context.Context, key string, value []byte) error {
	if in.isClosed() {
		return ErrClosed
	}
	if _, err := in.state.Put(ctx, stateKey(key), value); err != nil {
		return fmt.Errorf("inbox: writing state %q: %w", key, err)
	}
	return nil
}

// stateKey maps any string to a valid bucket key.
func stateKey(key string) string {
	return "k" + base64.RawURLEncoding.EncodeToString([]byte(key))
}
