package runner

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A fair share of the workers for each tenant, at any depth.
//
// A consumer hands its deliveries out in stored order, so one consumer for
// all would run a tenant's flood to its end before the first delivery of
// another tenant stored after it. The intake therefore stores a tenant's
// deliveries on its own subject once it has a backlog (package overflow):
// the workers' consumer then holds no more than a few of any tenant's
// deliveries not yet handed out, and each tenant with a backlog has a
// consumer of its own. The runner fetches from each of these sources, up to
// placesPerWorker deliveries per worker held (queued or running) per source,
// and queues them by tenant (the deliveries without a tenant form one
// group). Each worker that frees up takes the next delivery of the group
// with the fewest handlers running, the groups tied taking turns: a tenant
// with a backlog holds no more than its share of the workers once another
// has deliveries waiting, and runs on every worker while it is alone.
// Another tenant's delivery waits for the few of others stored before it on
// the shared subject and for a worker to free up, whatever the backlog; so
// in a cluster and in a fleet, where every runner fetches from every source.
// The runners find the tenants' consumers by listing them every
// overflowEvery (overflow.go). A worker that finishes a delivery takes the
// next one itself, the same way (work, in worker.go), so that the next one's
// attempt shares a record with the status of the one finished: the places
// past Workers keep some queued for it while every worker is busy. Within a
// group the deliveries of the workers' consumer run first (other tenants'
// deliveries wait behind them on the shared subject), then the others in the
// order fetched. The leases of the deliveries queued are renewed
// (InProgress) like those of the running ones, so that none runs out while
// it waits. Ordered deliveries keep their own places and order per key
// (keys.go), where the due keys are claimed the same way, fewest running
// first.

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
	src     *source // holds its place until it ends
	tenant  string
	size    int64
	renewed time.Time
	// check: stored before its source's consumer was made, so it may have
	// run under a consumer of its subject before (overflow.go).
	check bool
}

func newFairQueue() *fairQueue {
	return &fairQueue{kick: make(chan struct{}, 1), groups: map[string]*fairGroup{}, running: map[string]int{}}
}

// push queues m (msg, src, tenant and check set); false once the queue is
// closed (the caller hands it back).
func (q *fairQueue) push(m queuedMsg) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	g := q.groups[m.tenant]
	if g == nil {
		g = &fairGroup{}
		q.groups[m.tenant] = g
		q.turn = append(q.turn, m.tenant)
	}
	m.size, m.renewed = int64(len(m.msg.Data())), time.Now()
	g.msgs = append(g.msgs, m)
	q.bytes += m.size
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
	// Within the group, the deliveries of the workers' consumer first:
	// other tenants' deliveries stored after them on the shared subject
	// wait for them.
	i := 0
	for j := range g.msgs {
		if src := g.msgs[j].src; src != nil && !src.tenant {
			i = j
			break
		}
	}
	m = g.msgs[i]
	copy(g.msgs[i:], g.msgs[i+1:])
	g.msgs[len(g.msgs)-1] = queuedMsg{}
	g.msgs = g.msgs[:len(g.msgs)-1]
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

// waiting reports whether deliveries are queued for a worker.
func (q *fairQueue) waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.turn) > 0
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
func (q *fairQueue) close() []queuedMsg {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var out []queuedMsg
	for _, g := range q.groups {
		out = append(out, g.msgs...)
	}
	q.groups, q.turn, q.bytes = map[string]*fairGroup{}, nil, 0
	return out
}
