package proxy

import (
	"crypto/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// channel is one channel: its subscribers and its replay buffer.
//
// Event ids are "<epoch>-<seq>". seq counts the channel's deliveries from 1; epoch
// is random, drawn when the channel is created in this process (or its journal
// file is created), so that an id from an earlier life of the channel (before a
// restart without journal, or before it was emptied and dropped) is recognised as
// such instead of being compared with numbers that started again from 1.
type channel struct {
	name  string
	epoch string

	mu      sync.Mutex
	entries []entry // ordered by seq
	bytes   int64
	head    uint64 // the last seq given out
	subs    map[*subscriber]struct{}
	journal *journal // nil without a journal
	// dropped is set, under mu, when the channel is found empty and taken out
	// of the server's map: whoever still holds it must look the channel up
	// again rather than publish into or subscribe to a channel no one sees.
	dropped bool
}

func newChannel(name, epoch string) *channel {
	return &channel{name: name, epoch: epoch, subs: map[*subscriber]struct{}{}}
}

// newEpoch returns a short random epoch.
func newEpoch() string {
	return rand.Text()[:8]
}

// id returns the event id of seq.
func (c *channel) id(seq uint64) string {
	return c.epoch + "-" + strconv.FormatUint(seq, 10)
}

// limits bound a replay buffer.
type limits struct {
	events int
	bytes  int64
	age    time.Duration
}

// publish adds a delivery, evicts what the limits no longer allow, and wakes the
// subscribers. It returns the delivery's id and the journal's error, if it failed
// to record it (the delivery is still published); ok is false, and nothing is
// done, when the channel was dropped.
func (c *channel) publish(data []byte, now time.Time, lim limits) (id string, jerr error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return "", nil, false
	}
	c.head++
	e := entry{seq: c.head, at: now, data: data}
	c.entries = append(c.entries, e)
	c.bytes += int64(len(data))
	c.evictLocked(now, lim)
	var err error
	if c.journal != nil {
		err = c.journal.append(e, c.entries)
	}
	for s := range c.subs {
		select {
		case s.notify <- struct{}{}:
		default: // already has a wake-up pending
		}
	}
	return c.id(e.seq), err, true
}

// evictLocked drops the oldest entries beyond the limits, always keeping the
// newest one so that subscribers connected now still get it.
func (c *channel) evictLocked(now time.Time, lim limits) {
	n := 0
	for n < len(c.entries)-1 {
		e := c.entries[n]
		if len(c.entries)-n <= lim.events && c.bytes <= lim.bytes && now.Sub(e.at) <= lim.age {
			break
		}
		c.bytes -= int64(len(e.data))
		n++
	}
	if n > 0 {
		clear(c.entries[:n])
		c.entries = append(c.entries[:0:0], c.entries[n:]...)
	}
	if len(c.entries) == 1 && now.Sub(c.entries[0].at) > lim.age {
		c.bytes = 0
		c.entries = nil
	}
}

// subscribe registers a subscriber and returns the seq it has seen: the deliveries
// after it are the ones to send it. lastEventID is the Last-Event-ID it sent.
//
//   - none: a new subscriber starts from now, as on smee;
//   - an id of this channel's epoch: it resumes after that delivery;
//   - anything else (an id from before a restart without journal, from a dropped
//     channel, or not ours): everything still buffered is sent, since none of it
//     can have been seen under the id it holds.
//
// ok is false, and nothing is done, when the channel was dropped.
func (c *channel) subscribe(lastEventID string) (s *subscriber, cursor uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return nil, 0, false
	}
	s = &subscriber{notify: make(chan struct{}, 1)}
	c.subs[s] = struct{}{}
	if lastEventID == "" {
		return s, c.head, true
	}
	if epoch, seqStr, ok := strings.Cut(lastEventID, "-"); ok && epoch == c.epoch {
		if seq, err := strconv.ParseUint(seqStr, 10, 64); err == nil {
			return s, min(seq, c.head), true
		}
	}
	if len(c.entries) == 0 {
		return s, c.head, true
	}
	return s, c.entries[0].seq - 1, true
}

// unsubscribe removes s; when the channel is then empty (no subscribers, nothing
// buffered) it marks it dropped and reports true, and the caller must take it
// out of the server's map.
func (c *channel) unsubscribe(s *subscriber) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.subs, s)
	c.dropped = len(c.subs) == 0 && len(c.entries) == 0
	return c.dropped
}

// since returns the buffered deliveries after seq, and how many deliveries after
// seq are no longer buffered (evicted before this subscriber read them).
func (c *channel) since(seq uint64) (out []entry, lost uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].seq > seq })
	out = append(out, c.entries[i:]...)
	switch {
	case len(out) > 0 && out[0].seq > seq+1:
		lost = out[0].seq - seq - 1
	case len(out) == 0 && c.head > seq:
		lost = c.head - seq
	}
	return out, lost
}

// sweep evicts entries by age; like unsubscribe, it marks an empty channel
// dropped and reports true.
func (c *channel) sweep(now time.Time, lim limits) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := len(c.entries)
	c.evictLocked(now, lim)
	if c.journal != nil && len(c.entries) != before {
		c.journal.compact(c.entries, c.head)
	}
	c.dropped = len(c.subs) == 0 && len(c.entries) == 0
	return c.dropped
}
