package runner

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A fair share of the workers for each tenant.
//
// The workers' consumer hands deliveries out in stored order, so a runner
// that fetched only as many as it had free workers would run a tenant's
// flood to its end before the first delivery of another tenant stored
// after it. Instead the runner fetches ahead, up to fairWindow deliveries
// per worker beyond those running (and fairWindowBytes of bodies), and
// queues them by tenant (the deliveries without a tenant form one group).
// Each worker that frees up takes the next delivery of the group with the
// fewest handlers running, the groups tied taking turns: a tenant with a
// backlog holds no more than its share of the workers once another has
// deliveries waiting, and runs on every worker while it is alone. Within a
// group the deliveries run in the order fetched. The leases of the
// deliveries queued are renewed (InProgress) like those of the running
// ones, so that none runs out while it waits.
//
// The share holds among the deliveries the runner holds: a tenant's
// backlog larger than the window delays the others' until it shrinks to
// the window (each worker frees its place for the next delivery stored).
// The window is the embedded mode's only. In a cluster a receiver fetches
// no more than its free workers, as before: with the window, a receiver
// fetching ahead slowed the cluster so that deliveries stored while a stream
// leader was shut down were refused (TestClusterKeepsAnswering), for a reason
// not yet found; there the share holds only among the deliveries fetched at
// once.
// Ordered deliveries keep their own places and order per key (keys.go),
// where the due keys are claimed the same way, fewest running first.

// fairWindow is how many deliveries per worker the runner holds queued
// beyond those running.
const fairWindow = 32

// fairWindowBytes bounds the bodies queued: once reached, the runner
// fetches again only when some have started.
const fairWindowBytes = 32 << 20

// fairQueue holds the deliveries fetched and not yet started, by tenant.
type fairQueue struct {
	kick chan struct{} // a delivery was queued

	mu      sync.Mutex
	groups  map[string]*fairGroup
	turn    []string // the groups with deliveries queued, the next turn first
	running map[string]int
	bytes   int64
	closed  bool
}

// fairGroup is one tenant's queue.
type fairGroup struct {
	msgs []queuedMsg
}

// queuedMsg is a delivery waiting for a worker, with when its lease was
// last renewed.
type queuedMsg struct {
	msg     jetstream.Msg
	tenant  string
	size    int64
	renewed time.Time
}

func newFairQueue() *fairQueue {
	return &fairQueue{kick: make(chan struct{}, 1), groups: map[string]*fairGroup{}, running: map[string]int{}}
}

// push queues msg for tenant; false once the queue is closed (the caller
// hands it back).
func (q *fairQueue) push(msg jetstream.Msg, tenant string) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	g := q.groups[tenant]
	if g == nil {
		g = &fairGroup{}
		q.groups[tenant] = g
		q.turn = append(q.turn, tenant)
	}
	size := int64(len(msg.Data()))
	g.msgs = append(g.msgs, queuedMsg{msg: msg, tenant: tenant, size: size, renewed: time.Now()})
	q.bytes += size
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	return true
}

// pop takes the next delivery to run, counting it as running for its
// tenant until done is called; ok is false when none is queued.
func (q *fairQueue) pop() (m queuedMsg, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.turn) == 0 {
		return queuedMsg{}, false
	}
	// The fewest running first; among those the one whose turn it is.
	best := 0
	for i, t := range q.turn {
		if q.running[t] < q.running[q.turn[best]] {
			best = i
		}
	}
	t := q.turn[best]
	g := q.groups[t]
	m = g.msgs[0]
	g.msgs[0] = queuedMsg{}
	g.msgs = g.msgs[1:]
	q.turn = append(q.turn[:best], q.turn[best+1:]...)
	if len(g.msgs) == 0 {
		delete(q.groups, t)
	} else {
		q.turn = append(q.turn, t) // its next turn after the others'
	}
	q.running[t]++
	q.bytes -= m.size
	return m, true
}

// done ends a delivery of tenant that pop handed out.
func (q *fairQueue) done(tenant string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[tenant]--; q.running[tenant] <= 0 {
		delete(q.running, tenant)
	}
}

// full reports whether the bodies queued reach fairWindowBytes.
func (q *fairQueue) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes >= fairWindowBytes
}

// stale returns the deliveries queued whose lease was last renewed before
// since, marking them renewed now.
func (q *fairQueue) stale(since time.Time) []jetstream.Msg {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []jetstream.Msg
	now := time.Now()
	for _, g := range q.groups {
		for i := range g.msgs {
			if g.msgs[i].renewed.Before(since) {
				out = append(out, g.msgs[i].msg)
				g.msgs[i].renewed = now
			}
		}
	}
	return out
}

// close refuses further pushes and returns what is queued, to be handed
// back.
func (q *fairQueue) close() []jetstream.Msg {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var out []jetstream.Msg
	for _, g := range q.groups {
		for _, m := range g.msgs {
			out = append(out, m.msg)
		}
	}
	q.groups, q.turn, q.bytes = map[string]*fairGroup{}, nil, 0
	return out
}
