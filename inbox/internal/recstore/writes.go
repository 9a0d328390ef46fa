package recstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// writes sends an Indexed's records and reads the store's answers on a
// reply subscription of its own, instead of the client's asynchronous
// publish: that one arms a timer per write (its timeout), hands each
// answer through two channels and decodes it with encoding/json, on the
// path of nearly every delivery. Here the answer is read in place (the
// store writes it as `{"stream":"<name>","seq":<n>}`), applied on the
// subscription's goroutine, and the writes are timed out by a sweep.
type writes struct {
	nc     *nats.Conn
	sub    *nats.Subscription
	prefix string // the reply subjects' prefix: <inbox>.
	ack    []byte // the start of the store's answer: {"stream":"<name>","seq":
	status chan nats.Status
	// retryWait is how long a write answered "no responders" waits to be
	// sent again (noRespondersWait).
	retryWait time.Duration

	mu       sync.Mutex
	next     uint64
	inflight map[uint64]*write
	flushers []flusher
}

// write is a record sent and not yet answered.
type write struct {
	entries []*recordEntry
	msg     *nats.Msg
	retries int // answers "no responders" sent again
	sent    time.Time
	claimed bool          // answered or given up: its outcome is being applied
	handled chan struct{} // closed once applied, when not nil
}

// flusher waits for the writes numbered up to upTo.
type flusher struct {
	upTo uint64
	done chan struct{}
}

// ackTimeoutEvery is how often the writes are looked at for answers that
// did not come within AsyncAckWait.
const ackTimeoutEvery = time.Second

// startWrites subscribes to the answers of r's writes, which it applies to
// r's index.
func (r *Indexed) startWrites(nc *nats.Conn) error {
	w := &writes{
		nc: nc, prefix: nc.NewInbox() + ".", inflight: make(map[uint64]*write), retryWait: noRespondersWait,
		ack: fmt.Appendf(nil, `{"stream":%q,"seq":`, r.stream.CachedInfo().Config.Name),
	}
	sub, err := nc.Subscribe(w.prefix+"*", r.answered)
	if err != nil {
		return fmt.Errorf("inbox: subscribing to the answers of the record writes: %w", err)
	}
	// The answers must never be dropped as a slow consumer's: each one
	// not read is a write given up after AsyncAckWait.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	w.sub = sub
	// The writes under way when the connection drops are answered by
	// nobody: they are given up at once, as the client does for its own.
	w.status = nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
	r.w = w
	return nil
}

// send publishes rec with the reply subject of a new write of entries;
// the answer applies it (answered). It returns the write, or the error of
// a publish that did not go out.
func (r *Indexed) send(rec []byte, entries []*recordEntry, waited bool) (*write, error) {
	w := r.w
	wr := &write{entries: entries, sent: time.Now()}
	if waited {
		wr.handled = make(chan struct{})
	}
	w.mu.Lock()
	w.next++
	id := w.next
	w.inflight[id] = wr
	w.mu.Unlock()
	var b [20]byte
	msg := &nats.Msg{Subject: r.subject, Reply: w.prefix + string(strconv.AppendUint(b[:0], id, 10)), Data: rec}
	wr.msg = msg
	if err := w.nc.PublishMsg(msg); err != nil {
		w.mu.Lock()
		delete(w.inflight, id)
		w.flushed()
		w.mu.Unlock()
		return nil, err
	}
	return wr, nil
}

// answered applies the store's answer to a write.
func (r *Indexed) answered(m *nats.Msg) {
	w := r.w
	id, err := strconv.ParseUint(m.Subject[len(w.prefix):], 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	wr := w.inflight[id]
	if wr == nil || wr.claimed {
		w.mu.Unlock()
		return // given up already
	}
	wr.claimed = true
	w.mu.Unlock()
	seq, err := w.parseAck(m)
	if errors.Is(err, jetstream.ErrNoStreamResponse) && wr.retries < noRespondersRetries {
		// The stream's subscription not there yet (a server starting
		// again): sent again a moment later, as the client does.
		w.mu.Lock()
		wr.retries++
		wr.claimed = false
		wr.sent = time.Now()
		w.mu.Unlock()
		time.AfterFunc(w.retryWait, func() { r.resend(id, wr) })
		return
	}
	r.settleWrite(id, wr, seq, err)
}

// The writes answered "no responders" are sent again noRespondersRetries
// times, noRespondersWait apart (the client's defaults for its own).
const (
	noRespondersRetries = 2
	noRespondersWait    = 250 * time.Millisecond
)

// resend sends wr, numbered id, again unless it was given up meanwhile.
func (r *Indexed) resend(id uint64, wr *write) {
	w := r.w
	w.mu.Lock()
	live := w.inflight[id] == wr && !wr.claimed
	w.mu.Unlock()
	if !live {
		return
	}
	if err := w.nc.PublishMsg(wr.msg); err != nil {
		w.mu.Lock()
		if wr.claimed {
			w.mu.Unlock()
			return
		}
		wr.claimed = true
		w.mu.Unlock()
		r.settleWrite(id, wr, 0, err)
	}
}

// settleWrite applies the outcome of wr, numbered id and claimed, and
// ends it.
func (r *Indexed) settleWrite(id uint64, wr *write, seq uint64, err error) {
	r.finish(wr, seq, err)
	w := r.w
	w.mu.Lock()
	delete(w.inflight, id)
	w.flushed()
	w.mu.Unlock()
}

// parseAck returns the sequence the store gave a write, or why it did not
// store it.
func (w *writes) parseAck(m *nats.Msg) (uint64, error) {
	if len(m.Data) == 0 && m.Header != nil {
		if m.Header.Get("Status") == "503" {
			return 0, jetstream.ErrNoStreamResponse
		}
		return 0, fmt.Errorf("inbox: a record write answered with status %s %s", m.Header.Get("Status"), m.Header.Get("Description"))
	}
	if rest, ok := bytes.CutPrefix(m.Data, w.ack); ok {
		seq, n := uint64(0), 0
		for n < len(rest) && n < 20 && '0' <= rest[n] && rest[n] <= '9' {
			seq = seq*10 + uint64(rest[n]-'0')
			n++
		}
		if n > 0 && n < 20 && n == len(rest)-1 && rest[n] == '}' {
			return seq, nil
		}
	}
	// Any other form (an error, a domain, a duplicate): decoded whole.
	var pa struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
		Seq    uint64              `json:"seq"`
	}
	if err := json.Unmarshal(m.Data, &pa); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if pa.Error != nil {
		return 0, pa.Error
	}
	if pa.Stream == "" {
		return 0, jetstream.ErrInvalidJSAck
	}
	return pa.Seq, nil
}

// finish applies the outcome of a write: its sequence in the index, or a
// rescan when it failed (stored or not, its sequence is unknown: a timeout
// may hide a record written).
func (r *Indexed) finish(wr *write, seq uint64, err error) {
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			r.log.Warn("inbox: writing a delivery's record", "stream", r.stream.CachedInfo().Config.Name, "error", err)
		}
		r.markRescan()
	} else {
		for _, e := range wr.entries {
			for _, k := range e.keys {
				r.set(keyHash(k), seq)
			}
		}
	}
	r.applied(wr.entries)
	settle(wr.entries, err)
	if wr.handled != nil {
		close(wr.handled)
	}
}

// flushed closes the waits of the flushers whose writes are all applied.
// w.mu is held.
func (w *writes) flushed() {
	if len(w.flushers) == 0 {
		return
	}
	low := w.next + 1
	for id := range w.inflight {
		low = min(low, id)
	}
	keep := w.flushers[:0]
	for _, f := range w.flushers {
		if f.upTo < low {
			close(f.done)
		} else {
			keep = append(keep, f)
		}
	}
	clear(w.flushers[len(keep):])
	w.flushers = keep
}

// sentSoFar returns a channel closed once every write sent so far is applied.
func (w *writes) sentSoFar() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := flusher{upTo: w.next, done: make(chan struct{})}
	w.flushers = append(w.flushers, f)
	w.flushed()
	return f.done
}

// giveUp fails the writes sent before cutoff (all of them when cutoff is
// zero) with err.
func (r *Indexed) giveUp(cutoff time.Time, err error) {
	w := r.w
	w.mu.Lock()
	var ids []uint64
	var late []*write
	for id, wr := range w.inflight {
		if !wr.claimed && (cutoff.IsZero() || wr.sent.Before(cutoff)) {
			wr.claimed = true
			ids = append(ids, id)
			late = append(late, wr)
		}
	}
	w.mu.Unlock()
	if len(late) == 0 {
		return
	}
	for _, wr := range late {
		r.finish(wr, 0, err)
	}
	w.mu.Lock()
	for _, id := range ids {
		delete(w.inflight, id)
	}
	w.flushed()
	w.mu.Unlock()
}

// watchWrites gives up the writes not answered within AsyncAckWait, and
// those under way when the connection drops, until Close; then every one
// still waiting.
func (r *Indexed) watchWrites() {
	defer r.done.Done()
	t := time.NewTicker(ackTimeoutEvery)
	defer t.Stop()
	status := r.w.status
	for {
		select {
		case <-t.C:
			r.giveUp(time.Now().Add(-AsyncAckWait), jetstream.ErrAsyncPublishTimeout)
		case _, ok := <-status:
			if !ok {
				status = nil
			}
			r.giveUp(time.Time{}, nats.ErrDisconnected)
		case <-r.stop:
			_ = r.w.sub.Unsubscribe()
			r.w.nc.RemoveStatusListener(r.w.status)
			r.giveUp(time.Time{}, ErrClosed)
			return
		}
	}
}
