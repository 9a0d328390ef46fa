package inbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/clusterread"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// List implements delivery.Store: stored deliveries, newest first, from the
// inbox stream (a dead letter whose stored copy aged out is in Dead only),
// without their payloads. It reads the messages' headers only (a
// headers-only consumer), so that its memory does not grow with the
// payloads. A delivery stored again by Retry or Replay appears once, at its
// latest copy.
func (in *Inbox) List(ctx context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
	if in.isClosed() {
		return nil, ErrClosed
	}
	if o.Limit <= 0 {
		o.Limit = delivery.DefaultListLimit
	}
	info, err := in.streamInfo(ctx, in.inbox)
	if err != nil {
		return nil, fmt.Errorf("inbox: list: %w", err)
	}
	hi, first := info.State.LastSeq, info.State.FirstSeq
	if o.Before > 0 && o.Before-1 < hi {
		hi = o.Before - 1
	}
	var out []delivery.Record
	// A page of a long listing reads its own messages and few more: the
	// window grows only when filters or superseded copies leave it short.
	window := uint64(max(o.Limit+o.Limit/8, 64))
	for hi >= first && hi > 0 && len(out) < o.Limit {
		lo := first
		if hi-first >= window {
			lo = hi - window + 1
		}
		msgs, err := in.headers(ctx, in.inbox, lo, hi)
		if err != nil {
			return out, fmt.Errorf("inbox: list: %w", err)
		}
		if o.Name != "" || o.Tenant != "" {
			msgs = slices.DeleteFunc(msgs, func(m headerMsg) bool {
				return o.Name != "" && m.header.Get(stored.HeaderEvent) != o.Name || o.Tenant != "" && m.header.Get(stored.HeaderTenant) != o.Tenant
			})
		}
		for i := len(msgs) - 1; i >= 0 && len(out) < o.Limit; i-- {
			m := &msgs[i]
			r, ok := in.record(ctx, m.header, nil, m.size, m.subject, m.seq)
			if !ok || (o.Status != "" && r.Status != o.Status) {
				continue
			}
			out = append(out, r)
		}
		if lo <= first {
			break
		}
		hi = lo - 1
		window = min(2*window, 4096)
	}
	return out, nil
}

// headerMsg is a stored message read without its payload.
type headerMsg struct {
	seq     uint64
	subject string
	header  nats.Header
	size    int
}

// reading runs op until it succeeds or fails for good (clusterread.Retry):
// an embedded inbox, or one closing, does not retry.
func (in *Inbox) reading(ctx context.Context, op func(context.Context) error) error {
	return clusterread.Retry(ctx, func() bool { return in.ns != nil || in.isClosed() }, op)
}

// streamInfo reads st's state, waiting out a cluster's election.
func (in *Inbox) streamInfo(ctx context.Context, st jetstream.Stream) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := in.reading(ctx, func(ctx context.Context) (err error) {
		info, err = st.Info(ctx)
		return err
	})
	return info, err
}

// headers reads the headers of the messages of st from sequence lo to hi,
// without their payloads, through a short-lived headers-only consumer. The
// server still reads each message whole from its file (its block stays in a
// cache the garbage collector may take back): one read runs at a time, so
// that concurrent lists and searches cost one message's memory, not one
// each. In a cluster, a consumer that fails (placed on a server that
// restarted and is not current, or lost with it) is replaced by a new one
// from where the last stopped, until clusterread.Patience.
func (in *Inbox) headers(ctx context.Context, st jetstream.Stream, lo, hi uint64) ([]headerMsg, error) {
	select {
	case in.scan <- struct{}{}:
		defer func() { <-in.scan }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var out []headerMsg
	err := in.reading(ctx, func(ctx context.Context) error {
		var err error
		out, lo, err = in.readHeaders(ctx, st, out, lo, hi)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("reading headers: %w", err)
	}
	return out, nil
}

// readHeaders appends to out the headers of st's messages from lo to hi
// through one consumer, and returns the sequence to go on from.
func (in *Inbox) readHeaders(ctx context.Context, st jetstream.Stream, out []headerMsg, lo, hi uint64) ([]headerMsg, uint64, error) {
	if lo > hi {
		return out, lo, nil
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       lo,
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       true,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return out, lo, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = st.DeleteConsumer(dctx, cons.CachedInfo().Name)
	}()
	host := ""
	if ci := cons.CachedInfo().Cluster; ci != nil {
		host = ci.Leader
	}
	if host == "" && in.ns == nil {
		// Created, its server not said yet: ask it.
		if info, err := cons.Info(ctx); err == nil && info.Cluster != nil {
			host = info.Cluster.Leader
		}
	}
	if err := clusterread.ReplicaCurrent(ctx, st, host, in.ns != nil); err != nil {
		return out, lo, err
	}
	for {
		want := int(min(hi-lo+1, 256))
		batch, err := cons.FetchNoWait(want)
		if err != nil {
			return out, lo, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			seq := md.Sequence.Stream
			if seq > hi || seq < lo {
				continue
			}
			h := m.Headers()
			if h == nil {
				h = nats.Header{}
			}
			size := stored.Int(h.Get(stored.HeaderSize))
			if s := h.Get("Nats-Msg-Size"); s != "" {
				size = stored.Int(s)
			}
			out = append(out, headerMsg{seq: seq, subject: m.Subject(), header: h, size: size})
			lo = seq + 1
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
			return out, lo, err
		}
		if lo > hi {
			return out, lo, nil
		}
		if n == 0 {
			// The end of what the consumer's server holds: the end of the
			// range, unless that server fell behind meanwhile.
			return out, lo, clusterread.ReplicaCurrent(ctx, st, host, in.ns != nil)
		}
	}
}

// record builds the Record of a message of the inbox stream; false for an
// older copy of a delivery stored again. data is nil for a header-only read.
func (in *Inbox) record(ctx context.Context, h nats.Header, data []byte, size int, subject string, seq uint64) (delivery.Record, bool) {
	if h == nil {
		h = nats.Header{}
	}
	key := stored.StatusKey(h, stored.TokenOf(h, subject), seq)
	st := in.loadStatus(ctx, key)
	if st != nil && st.Seq > seq {
		return delivery.Record{}, false
	}
	r := stored.Record(h, data, size, seq, st)
	if st != nil && st.Seq < seq {
		// Stored again, its status not written yet: this copy is queued.
		r.Status = delivery.StatusQueued
	}
	if in.isRunning(key) {
		r.Status = delivery.StatusRunning
	}
	r.MaxAttempts = len(in.opts.RetryDelays) + 1
	return r, true
}

// Get implements delivery.Store: the delivery with id, its latest stored copy
// with its status and payload, or its dead letter. The payload is never cut:
// the inbox stores none larger than the server's max payload
// (DefaultMaxPayload embedded). The error wraps delivery.ErrNotFound when the
// inbox holds none.
func (in *Inbox) Get(ctx context.Context, id string) (delivery.Record, error) {
	if in.isClosed() {
		return delivery.Record{}, ErrClosed
	}
	if id == "" {
		return delivery.Record{}, fmt.Errorf("inbox: get: empty delivery id")
	}
	token := stored.SubjectToken(id)
	var dm *jetstream.RawStreamMsg
	err := in.reading(ctx, func(ctx context.Context) (err error) {
		dm, err = in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token)
		return err
	})
	if err == nil {
		return in.deadRecord(ctx, dm.Header, dm.Data, len(dm.Data)), nil
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return delivery.Record{}, fmt.Errorf("inbox: get %q: %w", id, err)
	}
	var m *jetstream.RawStreamMsg
	err = in.reading(ctx, func(ctx context.Context) (err error) {
		m, err = in.lastStored(ctx, token)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return delivery.Record{}, fmt.Errorf("%w: %q", delivery.ErrNotFound, id)
	}
	if err != nil {
		return delivery.Record{}, fmt.Errorf("inbox: get %q: %w", id, err)
	}
	r, _ := in.record(ctx, m.Header, m.Data, len(m.Data), m.Subject, m.Sequence)
	return r, nil
}

// deadRecord builds the Record of a dead letter (data nil for a header-only
// read).
func (in *Inbox) deadRecord(ctx context.Context, h nats.Header, data []byte, size int) delivery.Record {
	var st stored.Status
	if json.Unmarshal([]byte(h.Get(stored.HeaderAttempts)), &st) != nil {
		st = stored.Status{Attempts: []delivery.Attempt{{Err: h.Get(stored.HeaderError)}}}
	}
	st.Status = delivery.StatusDead
	seq, _ := strconv.ParseUint(h.Get(stored.HeaderSeq), 10, 64)
	if seq != 0 {
		// Seq is 0 once the stored copy aged out of the inbox stream.
		if info, err := in.inbox.Info(ctx); err == nil && seq < info.State.FirstSeq {
			seq = 0
		}
	}
	r := stored.Record(h, data, size, seq, &st)
	r.MaxAttempts = len(in.opts.RetryDelays) + 1
	return r
}

// Dead returns the dead letters, newest first, without their payloads.
func (in *Inbox) Dead(ctx context.Context) ([]delivery.Record, error) {
	if in.isClosed() {
		return nil, ErrClosed
	}
	info, err := in.streamInfo(ctx, in.dead)
	if err != nil {
		return nil, fmt.Errorf("inbox: dead letters: %w", err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	msgs, err := in.headers(ctx, in.dead, info.State.FirstSeq, info.State.LastSeq)
	if err != nil {
		return nil, fmt.Errorf("inbox: dead letters: %w", err)
	}
	out := make([]delivery.Record, 0, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		out = append(out, in.deadRecord(ctx, msgs[i].header, nil, msgs[i].size))
	}
	return out, nil
}

// Watch implements delivery.Store: fn is called with each change of a
// delivery's status (stored, running, an attempt finished: handled,
// retrying, dead), without its payload, on the goroutine that made the
// change, until stop is called.
func (in *Inbox) Watch(fn func(delivery.Record)) (stop func()) { return in.watchers.Watch(fn) }

// notify tells the watchers of r.
func (in *Inbox) notify(r delivery.Record) {
	r.MaxAttempts = len(in.opts.RetryDelays) + 1
	in.watchers.Notify(r)
}

var _ delivery.Store = (*Inbox)(nil)

// Retry stores the dead letter of delivery id again, so that its handlers
// run again on a fresh retry schedule (attempt numbers go on), and removes
// it from the dead letters. The error wraps ErrNotDead when the delivery is
// not a dead letter, ErrNotFound when the inbox does not hold it.
func (in *Inbox) Retry(ctx context.Context, id string) error {
	if in.isClosed() {
		return ErrClosed
	}
	token := stored.SubjectToken(id)
	dm, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		if _, gerr := in.Get(ctx, id); gerr != nil {
			return gerr
		}
		return fmt.Errorf("%w: %q", delivery.ErrNotDead, id)
	}
	if err != nil {
		return fmt.Errorf("inbox: retry %q: %w", id, err)
	}
	r := in.deadRecord(ctx, dm.Header, nil, len(dm.Data))
	key := dm.Header.Get(stored.HeaderKey)
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
	token := stored.SubjectToken(id)
	if _, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token); err == nil {
		return in.Retry(ctx, id)
	}
	m, err := in.lastStored(ctx, token)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: %q", delivery.ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("inbox: replay %q: %w", id, err)
	}
	key := stored.StatusKey(m.Header, token, m.Sequence)
	var attempts []delivery.Attempt
	if st := in.loadStatus(ctx, key); st != nil {
		attempts = st.Attempts
	}
	if err := in.requeue(ctx, m.Header, m.Data, token, key, attempts); err != nil {
		return fmt.Errorf("inbox: replay %q: %w", id, err)
	}
	return nil
}

// requeue stores a delivery again under its status key, counting the
// attempts made so far. It refuses a copy whose seal does not hold (see
// checkSource): storing it again would seal what no receiver verified.
func (in *Inbox) requeue(ctx context.Context, h nats.Header, data []byte, token, key string, attempts []delivery.Attempt) error {
	if err := in.checkSource(h, data); err != nil {
		return err
	}
	m := &nats.Msg{Subject: in.storedSubject(h), Data: data, Header: make(nats.Header, len(h))}
	for k, v := range h {
		// Nats-* headers are the server's (a direct get adds the subject and
		// sequence it read): copied, they would mislead the next read.
		switch {
		case strings.HasPrefix(strings.ToLower(k), "nats-"):
			continue
		case k == stored.HeaderError || k == stored.HeaderAttempts || k == stored.HeaderSeq || k == stored.HeaderBefore || k == stored.HeaderKey:
			continue
		}
		m.Header[k] = v
	}
	before := 0
	if n := len(attempts); n > 0 {
		before = attempts[n-1].Number
	}
	m.Header.Set(stored.HeaderBefore, strconv.Itoa(before))
	m.Header.Set(stored.HeaderKey, key)
	// The status is written first: a worker may run the new copy, and write
	// its own, before this call could. Seq 0 stands for "the copy being
	// stored" (see record).
	old := in.loadStatus(ctx, key)
	st := &stored.Status{Status: delivery.StatusQueued, Attempts: attempts}
	if err := in.status.Put(ctx, key, st.Marshal()); err != nil {
		return fmt.Errorf("writing its status: %w", err)
	}
	in.seal(m)
	ack, err := in.js.PublishMsg(ctx, m)
	if err != nil {
		if old != nil {
			in.putStatus(ctx, key, old)
		}
		return in.describePublishError(err)
	}
	st.Seq = ack.Sequence
	if t := h.Get(stored.HeaderTenant); t != "" && in.quota != nil {
		in.quota.Add(ack.Sequence, t, int64(len(data)))
	}
	if h.Get(stored.HeaderDelivery) != "" {
		// The new copy is the one found by id (lastStored) from now on; a
		// failed write leaves the old one found until it runs.
		rec, _ := json.Marshal(seenID{Digest: bodyDigest(data), Seq: ack.Sequence})
		if err := in.seen.Put(ctx, seenIDKey(token), rec); err != nil {
			in.log.Warn("inbox: recording a delivery stored again", "delivery", h.Get(stored.HeaderDelivery), "error", err)
		}
	}
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
	token := stored.SubjectToken(id)
	// Its dedupe record first: it covers a delivery stored within the
	// duplicate window, even one whose stored copy was dropped
	// (HandledRetention).
	if ok, err := in.seen.Has(ctx, seenIDKey(token)); err != nil {
		return false, fmt.Errorf("inbox: holds %q: %w", id, err)
	} else if ok {
		return true, nil
	}
	if _, err := in.dead.GetLastMsgForSubject(ctx, in.deadSubj+token); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("inbox: holds %q: %w", id, err)
	}
	if _, err := in.lastStored(ctx, token); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
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
