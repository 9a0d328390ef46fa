// Package connlimit bounds the open connections of an http.Server: past the
// bound, a new connection makes room by closing the connection idle longest
// (a keep-alive connection between requests), then the one waiting longest
// for its first request; connections with a request in progress are never
// closed: while they alone fill the bound, new connections wait in the
// listener's backlog until one ends. So a flood of idle connections costs
// at most the bound in memory and file descriptors, and fresh deliveries
// are still accepted and answered. When accept fails for want of a file
// descriptor (EMFILE), the idle connection longest idle is closed and accept
// tried again.
package connlimit

import (
	"container/list"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// Limiter counts the connections of one http.Server. Its zero value is not
// usable: see New.
type Limiter struct {
	max int

	mu     sync.Mutex
	room   *sync.Cond                     // signalled when a connection ends or the listener closes
	conns  map[net.Conn]*entry            // every open connection
	idle   list.List                      // of *entry: between requests, longest first
	fresh  list.List                      // of *entry: before their first request, oldest first
	closed bool                           // the listener was closed
	next   func(net.Conn, http.ConnState) // the server's own hook, called after ours
}

type entry struct {
	c    net.Conn
	elem *list.Element // in idle or fresh; nil while a request is in progress
	in   *list.List
}

// New returns a Limiter of max connections; nil, no bound, when max is not
// positive.
func New(max int) *Limiter {
	if max <= 0 {
		return nil
	}
	l := &Limiter{max: max, conns: map[net.Conn]*entry{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

// Serve makes srv's connections from ln count: it returns the listener for
// srv.Serve and sets srv.ConnState (calling the hook srv had after its
// own). A nil Limiter returns ln and leaves srv as it is.
func (l *Limiter) Serve(srv *http.Server, ln net.Listener) net.Listener {
	if l == nil {
		return ln
	}
	l.next = srv.ConnState
	srv.ConnState = l.connState
	return &listener{Listener: ln, l: l}
}

// Open returns the number of connections open now.
func (l *Limiter) Open() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

type listener struct {
	net.Listener
	l *Limiter
}

// maxShed is how many idle connections one Accept closes, one at a time,
// while accept fails for want of a descriptor, before it returns the error
// (the http.Server then waits and tries again).
const maxShed = 16

func (ln *listener) Accept() (net.Conn, error) {
	for shed := 0; ; shed++ {
		c, err := ln.Listener.Accept()
		if err != nil {
			// A full descriptor table: an idle connection's descriptor is
			// the room a fresh delivery needs.
			if shed < maxShed && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && ln.l.shed() {
				continue
			}
			return nil, err
		}
		if !ln.l.admit(c) {
			c.Close()
			return nil, net.ErrClosed
		}
		return c, nil
	}
}

// shed closes the connection idle longest (else the one waiting longest
// for its first request), and reports whether there was one.
func (l *Limiter) shed() bool {
	l.mu.Lock()
	e := l.oldest()
	if e != nil {
		l.forget(e)
	}
	l.mu.Unlock()
	if e == nil {
		return false
	}
	e.c.Close()
	return true
}

func (ln *listener) Close() error {
	ln.l.mu.Lock()
	ln.l.closed = true
	ln.l.room.Broadcast()
	ln.l.mu.Unlock()
	return ln.Listener.Close()
}

// admit registers c, first closing idle connections (or waiting for one to
// end) while the bound is reached. It reports false when the listener was
// closed meanwhile.
func (l *Limiter) admit(c net.Conn) bool {
	var evict []net.Conn
	l.mu.Lock()
	for len(l.conns) >= l.max && !l.closed {
		e := l.oldest()
		if e == nil {
			l.room.Wait()
			continue
		}
		l.forget(e)
		evict = append(evict, e.c)
	}
	ok := !l.closed
	if ok {
		e := &entry{c: c}
		l.conns[c] = e
		l.park(e, &l.fresh)
	}
	l.mu.Unlock()
	for _, c := range evict {
		c.Close() // its server goroutine sees the error and ends
	}
	return ok
}

// oldest returns the connection to close first: idle longest, else waiting
// longest for its first request; nil when every one has a request in
// progress.
func (l *Limiter) oldest() *entry {
	for _, q := range []*list.List{&l.idle, &l.fresh} {
		if f := q.Front(); f != nil {
			return f.Value.(*entry)
		}
	}
	return nil
}

// park moves e to the back of q (nil: out of both queues).
func (l *Limiter) park(e *entry, q *list.List) {
	if e.elem != nil {
		e.in.Remove(e.elem)
		e.elem, e.in = nil, nil
	}
	if q != nil {
		e.elem, e.in = q.PushBack(e), q
	}
}

// forget drops e from the count.
func (l *Limiter) forget(e *entry) {
	l.park(e, nil)
	delete(l.conns, e.c)
	l.room.Signal()
}

func (l *Limiter) connState(c net.Conn, s http.ConnState) {
	key := c
	if u, ok := c.(interface{ NetConn() net.Conn }); ok {
		key = u.NetConn() // a TLS connection over the one accepted
	}
	l.mu.Lock()
	if e := l.conns[key]; e != nil {
		switch s {
		case http.StateActive:
			l.park(e, nil)
		case http.StateIdle:
			l.park(e, &l.idle)
			l.room.Signal() // one that waits may close it now
		case http.StateClosed, http.StateHijacked:
			l.forget(e)
		}
	}
	l.mu.Unlock()
	if l.next != nil {
		l.next(c, s)
	}
}
