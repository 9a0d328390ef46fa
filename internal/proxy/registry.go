package proxy

import (
	"errors"
	"time"
)

// The channels a Server holds: made on first use, dropped when idle or to
// hold the totals under their bounds.

// sweeper drops aged deliveries, and channels left empty and idle, once a
// minute.
func (s *Server) sweeper() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.mu.Lock()
			for name, c := range s.chans {
				if c.sweep(now, s.lim) {
					s.dropLocked(name, c)
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *Server) dropLocked(name string, c *channel) {
	delete(s.chans, name)
	if c.journal != nil {
		c.journal.remove()
	}
}

// dropOverflowLocked holds the buffers and the journals under their totals:
// the oldest deliveries of any channel go first, then the journals holding
// the most beyond their buffers are rewritten. s.mu is held.
func (s *Server) dropOverflowLocked() {
	for s.totals.buffered.Load() > s.opts.MaxBufferedBytes && evictOldestOf(s.chans) {
	}
	for s.totals.journal.Load() > s.opts.MaxJournalBytes {
		var worst *channel
		var waste int64
		for _, c := range s.chans {
			c.mu.Lock()
			if c.journal != nil && c.journal.size-c.bytes > waste {
				worst, waste = c, c.journal.size-c.bytes
			}
			c.mu.Unlock()
		}
		if worst == nil {
			return
		}
		worst.mu.Lock()
		err := worst.journal.compact(worst.entries, worst.head)
		worst.mu.Unlock()
		if err != nil {
			s.log.Error("journal compaction failed", "channel", worst.name, "err", err)
			return
		}
	}
}

// errTooManyChannels is returned by channel when MaxChannels is reached and
// every channel has subscribers.
var errTooManyChannels = errors.New("too many channels, all with subscribers")

// channel returns the named channel, creating it, in the place of the idlest
// channel without subscribers when MaxChannels are held.
func (s *Server) channel(name string) (*channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chans[name]; c != nil {
		return c, nil
	}
	if len(s.chans) >= s.opts.MaxChannels {
		var idlest *channel
		var since time.Time
		for _, c := range s.chans {
			c.mu.Lock()
			if len(c.subs) == 0 && (idlest == nil || c.lastActive.Before(since)) {
				idlest, since = c, c.lastActive
			}
			c.mu.Unlock()
		}
		if idlest == nil {
			return nil, errTooManyChannels
		}
		idlest.mu.Lock()
		idlest.dropped = true
		buffered := len(idlest.entries)
		idlest.dropFirst(len(idlest.entries))
		idlest.mu.Unlock()
		s.dropLocked(idlest.name, idlest)
		s.log.Warn("channel evicted to make room for a new one", "channel", idlest.name, "idle", time.Since(since).Round(time.Second),
			"dropped_deliveries", buffered, "max_channels", s.opts.MaxChannels)
	}
	now := time.Now()
	c := newChannel(name, newEpoch(), &s.totals, now)
	if s.opts.JournalDir != "" {
		j, err := createJournal(s.opts.JournalDir, name, c.epoch, &s.totals)
		if err != nil {
			return nil, err
		}
		c.journal = j
	}
	s.chans[name] = c
	return c, nil
}

// publish publishes data on the named channel, looking it up again if it was
// dropped in between, then holds the totals under their bounds.
func (s *Server) publish(name string, data []byte, now time.Time) (id string, subs int, jerr, err error) {
	for {
		c, err := s.channel(name)
		if err != nil {
			return "", 0, nil, err
		}
		if seq, subs, jerr, ok := c.publish(data, now, s.lim); ok {
			s.mu.Lock()
			s.dropOverflowLocked()
			s.mu.Unlock()
			return s.eventID(c, seq), subs, jerr, nil
		}
	}
}

// subscribe subscribes to the named channel, looking it up again if it was
// dropped in between. It resumes after lastEventID only when this proxy issued
// it for this channel in its current epoch; issued says whether it did.
func (s *Server) subscribe(name, lastEventID string) (c *channel, sub *subscriber, cursor uint64, issued bool, err error) {
	for {
		c, err := s.channel(name)
		if err != nil {
			return nil, nil, 0, false, err
		}
		seq, issued := parseEventID(s.key, name, c.epoch, lastEventID)
		if sub, cursor, ok := c.subscribe(seq, issued, time.Now()); ok {
			return c, sub, cursor, issued, nil
		}
	}
}
