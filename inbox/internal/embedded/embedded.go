// Package embedded runs the inbox's NATS server in the process, and starts
// it again, whole, on the same store: after a full disk JetStream stops
// itself (or keeps its streams' write errors) until its server is started
// again, and restarting JetStream alone on a server whose JetStream API
// still serves requests races inside nats-server.
//
// A Server is the connection provider of the process's connection
// (nats.InProcessServer): that connection reconnects to the new server on
// its own, so the handles made on it (streams, buckets, consumers) stay
// valid across a restart, and nothing outside needs swapping.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrStopped is the cause of an Attempt's context cancelled because the
// server it was made under, or its JetStream, stopped: a request sent to it
// has no answer coming, and may be sent again to the next one.
var ErrStopped = errors.New("inbox: the embedded server stopped")

// errDown is InProcessConn's error while no server runs.
var errDown = errors.New("inbox: the embedded server is not running")

// Server is an embedded NATS server that can be started again on the same
// options. Its methods are safe for concurrent use.
type Server struct {
	opts  server.Options
	ready time.Duration

	cur     atomic.Pointer[life] // nil while restarting or after Shutdown
	op      sync.Mutex           // one Restart or Shutdown at a time
	stopped bool                 // Shutdown was called; under op
}

// life is one server's run, which ends when the server or its JetStream
// stops. The attempts made under it are kept in a map of their own rather
// than as children of a context (context.AfterFunc): an attempt costs a map
// entry instead of a context, a closure and a stop function more.
type life struct {
	ns   *server.Server
	done chan struct{} // closed when the life ends

	mu       sync.Mutex
	next     uint64
	attempts map[uint64]context.CancelCauseFunc // nil once the life ended
}

// Start starts a server on opts and waits up to ready for it to take
// connections. Each start (Start, Restart) runs on a fresh copy of opts.
func Start(opts server.Options, ready time.Duration) (*Server, error) {
	s := &Server{opts: opts, ready: ready}
	ns, err := s.start()
	if err != nil {
		return nil, err
	}
	s.cur.Store(live(ns))
	return s, nil
}

// watchEvery is how often a server's JetStream is looked at: it stops
// itself on a full disk, leaving the requests under way unanswered.
const watchEvery = 250 * time.Millisecond

// live starts the life of ns, which ends when ns or its JetStream stops.
func live(ns *server.Server) *life {
	l := &life{ns: ns, done: make(chan struct{}), attempts: make(map[uint64]context.CancelCauseFunc)}
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-t.C:
			}
			if !ns.JetStreamEnabled() {
				l.end()
				return
			}
		}
	}()
	return l
}

// add registers an attempt's cancel, to be called with ErrStopped when the
// life ends; false (and nothing registered) when it has ended.
func (l *life) add(cancel context.CancelCauseFunc) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.attempts == nil {
		return 0, false
	}
	l.next++
	l.attempts[l.next] = cancel
	return l.next, true
}

// remove forgets the attempt id, finished before the life ended.
func (l *life) remove(id uint64) {
	l.mu.Lock()
	delete(l.attempts, id)
	l.mu.Unlock()
}

// end ends the life: its attempts are cancelled with ErrStopped. Only the
// first call does anything.
func (l *life) end() {
	l.mu.Lock()
	if l.attempts == nil {
		l.mu.Unlock()
		return
	}
	attempts := l.attempts
	l.attempts = nil
	close(l.done)
	l.mu.Unlock()
	for _, cancel := range attempts {
		cancel(ErrStopped)
	}
}

// start starts a server on a copy of the options.
func (s *Server) start() (*server.Server, error) {
	o := s.opts
	ns, err := server.NewServer(&o)
	if err != nil {
		return nil, fmt.Errorf("inbox: embedded NATS server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(s.ready) || o.JetStream && !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("inbox: embedded NATS server with store %s did not start (a full disk?)", o.StoreDir)
	}
	return ns, nil
}

// InProcessConn connects to the running server (nats.InProcessConnProvider):
// an error while none runs, which a connection that reconnects meets
// until the restart is over.
func (s *Server) InProcessConn() (net.Conn, error) {
	l := s.cur.Load()
	if l == nil {
		return nil, errDown
	}
	return l.ns.InProcessConn()
}

// JetStreamEnabled reports whether the running server's JetStream runs:
// false while restarting, after Shutdown, or once JetStream stopped itself
// (a full disk).
func (s *Server) JetStreamEnabled() bool {
	l := s.cur.Load()
	return l != nil && l.ns.JetStreamEnabled()
}

// Attempt returns ctx, also cancelled (with cause ErrStopped) once the
// server running now, or its JetStream, stops (at once when none runs),
// and its cancel: a request waiting for a server that stopped is answered
// by nobody, whatever its deadline.
func (s *Server) Attempt(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancelCause(ctx)
	l := s.cur.Load()
	if l == nil {
		cancel(ErrStopped)
		return actx, func() {}
	}
	id, ok := l.add(cancel)
	if !ok {
		cancel(ErrStopped)
		return actx, func() {}
	}
	return actx, func() {
		l.remove(id)
		cancel(context.Canceled)
	}
}

// Stopped reports whether ctx, an Attempt's context, was cancelled
// because its server stopped.
func Stopped(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrStopped)
}

// Restart shuts the running server down, waits until it has, and starts a
// new one on the same options (and so the same store). The clients of the
// old one are disconnected; a connection made with the Server as its
// provider and allowed to reconnect comes back by itself. An error leaves
// no server running: Restart may be called again.
func (s *Server) Restart() error {
	s.op.Lock()
	defer s.op.Unlock()
	if s.stopped {
		return errors.New("inbox: the embedded server is shut down")
	}
	stop(s.cur.Swap(nil))
	ns, err := s.start()
	if err != nil {
		return err
	}
	s.cur.Store(live(ns))
	return nil
}

// Shutdown stops the server for good and waits until it has (and for a
// Restart under way).
func (s *Server) Shutdown() {
	s.op.Lock()
	defer s.op.Unlock()
	s.stopped = true
	stop(s.cur.Swap(nil))
}

// stop shuts l's server down, waits until it has and ends l.
func stop(l *life) {
	if l == nil {
		return
	}
	l.ns.Shutdown()
	l.ns.WaitForShutdown()
	l.end()
}
