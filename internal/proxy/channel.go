package proxy

import (
	"crypto/rand"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// entry is one delivery in a channel's replay buffer.
type entry struct {
	seq  uint64
	at   time.Time
	data []byte // the message event's data: one line of JSON
}

// subscriber is one open event stream. notify holds at most one pending wake-up,
// so that publishing never waits for a subscriber.
type subscriber struct {
	notify chan struct{}
}

// totals are the byte counts the Server bounds across all channels.
type totals struct {
	buffered atomic.Int64 // message bytes in every replay buffer
	journal  atomic.Int64 // bytes of every journal file
}

// channel is one channel: its subscribers and its replay buffer.
//
// Event ids are "<epoch>-<seq>-<tag>". seq counts the channel's deliveries from
// 1; epoch is random, drawn when the channel is created in this process (or its
// journal file is created); tag is a MAC of the channel, epoch and seq under the
// Server's key. Only an id whose tag verifies, of the current epoch, was issued
// by this proxy for this channel, and only such an id is resumed from: a made-up
// one, or one of an earlier life of the channel, replays nothing.
type channel struct {
	name   string
	epoch  string
	totals *totals

	mu         sync.Mutex
	entries    []entry // ordered by seq
	bytes      int64
	head       uint64 // the last seq given out
	subs       map[*subscriber]struct{}
	lastActive time.Time // the last publish, subscription or unsubscription
	journal    *journal  // nil without a journal
	// dropped is set, under mu, when the channel is found empty (or evicted)
	// and taken out of the server's map: whoever still holds it must look the
	// channel up again rather than publish into or subscribe to a channel no
	// one sees.
	dropped bool
}

func newChannel(name, epoch string, t *totals, now time.Time) *channel {
	return &channel{name: name, epoch: epoch, totals: t, subs: map[*subscriber]struct{}{}, lastActive: now}
}

// newEpoch returns a short random epoch.
func newEpoch() string {
	return rand.Text()[:8]
}

// limits bound a replay buffer.
type limits struct {
	events int
	bytes  int64
	age    time.Duration
}

// add appends e to the buffer, counting its bytes.
func (c *channel) add(e entry) {
	c.entries = append(c.entries, e)
	c.bytes += int64(len(e.data))
	c.totals.buffered.Add(int64(len(e.data)))
}

// dropFirst drops the n oldest entries.
func (c *channel) dropFirst(n int) {
	if n <= 0 {
		return
	}
	var freed int64
	for _, e := range c.entries[:n] {
		freed += int64(len(e.data))
	}
	c.bytes -= freed
	c.totals.buffered.Add(-freed)
	clear(c.entries[:n])
	if n == len(c.entries) {
		c.entries = nil
		return
	}
	c.entries = append(c.entries[:0:0], c.entries[n:]...)
}

// publish adds a delivery, evicts what the limits no longer allow, and wakes the
// subscribers. It returns the delivery's seq and the journal's error, if it
// failed to record it (the delivery is still published); ok is false, and
// nothing is done, when the channel was dropped.
func (c *channel) publish(data []byte, now time.Time, lim limits) (seq uint64, subs int, jerr error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return 0, 0, nil, false
	}
	c.head++
	c.lastActive = now
	e := entry{seq: c.head, at: now, data: data}
	c.add(e)
	c.evictLocked(now, lim)
	var err error
	if c.journal != nil {
		err = c.journal.append(e, c.entries, c.bytes)
	}
	for s := range c.subs {
		select {
		case s.notify <- struct{}{}:
		default: // already has a wake-up pending
		}
	}
	return e.seq, len(c.subs), err, true
}

// evictLocked drops the oldest entries beyond the limits, always keeping the
// newest one (unless it is too old) so that subscribers connected now still get
// it.
func (c *channel) evictLocked(now time.Time, lim limits) {
	n, left := 0, c.bytes
	for n < len(c.entries)-1 {
		e := c.entries[n]
		if len(c.entries)-n <= lim.events && left <= lim.bytes && now.Sub(e.at) <= lim.age {
			break
		}
		left -= int64(len(e.data))
		n++
	}
	c.dropFirst(n)
	if len(c.entries) == 1 && now.Sub(c.entries[0].at) > lim.age {
		c.dropFirst(1)
	}
}

// subscribe registers a subscriber and returns the seq it has seen: the
// deliveries after it are the ones to send it. seq is the one of the
// Last-Event-ID it sent, already checked to be an id this proxy issued for this
// channel in its current epoch; issued is false when it sent none or another,
// and the subscriber then starts from now, with no replay.
//
// ok is false, and nothing is done, when the channel was dropped.
func (c *channel) subscribe(seq uint64, issued bool, now time.Time) (s *subscriber, cursor uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return nil, 0, false
	}
	s = &subscriber{notify: make(chan struct{}, 1)}
	c.subs[s] = struct{}{}
	c.lastActive = now
	if !issued {
		return s, c.head, true
	}
	return s, min(seq, c.head), true
}

// unsubscribe removes s. The channel stays, even empty, so that the id its
// subscribers were given keeps its meaning: the sweeper drops it once idle for
// the replay age, or a new channel takes its place when MaxChannels are held.
func (c *channel) unsubscribe(s *subscriber, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.subs, s)
	c.lastActive = now
}

// next returns the first buffered delivery after seq, and how many deliveries
// after seq are no longer buffered (evicted before this subscriber read them).
// A subscriber takes one delivery at a time, so that one that reads slowly
// keeps at most the one being written alive once the buffer moved on.
func (c *channel) next(seq uint64) (e entry, lost uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].seq > seq })
	if i == len(c.entries) {
		if c.head > seq {
			lost = c.head - seq
		}
		return entry{}, lost, false
	}
	e = c.entries[i]
	if e.seq > seq+1 {
		lost = e.seq - seq - 1
	}
	return e, lost, true
}

// sweep evicts entries by age; it marks a channel without subscribers nor
// deliveries, idle for the replay age, dropped and reports true, and the
// caller must take it out of the server's map.
func (c *channel) sweep(now time.Time, lim limits) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := len(c.entries)
	c.evictLocked(now, lim)
	if c.journal != nil && len(c.entries) != before {
		c.journal.compact(c.entries, c.head)
	}
	c.dropped = len(c.subs) == 0 && len(c.entries) == 0 && now.Sub(c.lastActive) > lim.age
	return c.dropped
}

// oldest returns when the oldest buffered delivery arrived; ok is false when
// nothing is buffered.
func (c *channel) oldest() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return time.Time{}, false
	}
	return c.entries[0].at, true
}

// evictOldestOf drops the oldest buffered delivery of all chans, so that the
// total across channels goes back under its bound. It reports false when
// nothing is buffered anywhere. The journal of the channel it took from is
// compacted later, when the journals' total asks for it.
func evictOldestOf(chans map[string]*channel) bool {
	var victim *channel
	var at time.Time
	for _, c := range chans {
		if t, ok := c.oldest(); ok && (victim == nil || t.Before(at)) {
			victim, at = c, t
		}
	}
	if victim == nil {
		return false
	}
	victim.mu.Lock()
	victim.dropFirst(min(1, len(victim.entries)))
	victim.mu.Unlock()
	return true
}
