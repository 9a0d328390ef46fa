// Package waitroom is the byte budget that several requests share (the
// middleware's unverified bodies, the proxy's pending deliveries), with its
// shares (large requests, each key) and its waiting: a request that does not
// fit waits until another gives bytes back, or until its deadline, and then
// tries again.
package waitroom

import "time"

// Signal tells the waiters that bytes were given back. Its zero value is
// ready; its methods are called with the budget's own lock held.
type Signal struct {
	ch chan struct{}
}

// Wait returns a channel closed at the next Broadcast.
func (s *Signal) Wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Broadcast wakes every waiter.
func (s *Signal) Broadcast() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Until calls try until it reports true, and between tries waits for the
// channel try returned with false (a Signal's Wait) to close. It reports false
// once until has passed without try succeeding; a zero until tries once.
func Until(until time.Time, try func() (bool, <-chan struct{})) bool {
	for {
		ok, freed := try()
		if ok {
			return true
		}
		left := time.Until(until)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}
