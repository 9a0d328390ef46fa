// Package quota counts the bytes of each tenant's deliveries stored and not
// yet ended: the inbox's bound per tenant of the store.
//
// Each tenant's deliveries stored and not yet ended (handled, or a dead
// letter) are counted by their bodies' bytes, per stream sequence, so that a
// delivery ended twice (run again after a crash) is released once. The
// counts live in memory: on the first delivery of a tenant after Open they
// are read from the store (the deliveries not acknowledged to the workers'
// consumer, and the order keys' heads and those parked behind them, whose
// status says they have not ended), and from then on kept by Enqueue and by
// the status writes of this process. In a cluster the deliveries may run in
// other processes (forgehooks work): there they are read again every
// minute (the inbox's tenantRecountEvery).
package quota

import "sync"

// Quota counts the bytes of each tenant's deliveries not yet ended.
type Quota struct {
	max int64 // <= 0: no bound

	countMu sync.Mutex // held by the first count
	counted bool       // the first count, from the store, is done

	mu   sync.Mutex
	held map[uint64]Entry // by stream sequence
	used map[string]int64 // by tenant, with the reservations of Enqueue
	// While the store is read: the sequences ended meanwhile, not to be
	// counted from what was read.
	counting bool
	gone     map[uint64]bool
}

// Entry is a delivery counted: its tenant and its body's size.
type Entry struct {
	Tenant string
	Size   int64
}

// New returns a Quota of max bytes per tenant.
func New(max int64) *Quota {
	return &Quota{max: max, held: map[uint64]Entry{}, used: map[string]int64{}, gone: map[uint64]bool{}}
}

// Reserve takes size bytes of tenant's share for a delivery about to be
// stored; false when they do not fit. The caller ends the reservation with
// Stored or unreserve.
func (q *Quota) Reserve(tenant string, size int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used[tenant]+size > q.max {
		return false
	}
	q.used[tenant] += size
	return true
}

// Unreserve gives back a reservation whose delivery was not stored.
func (q *Quota) Unreserve(tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sub(tenant, size)
}

// Stored turns a reservation into the delivery stored at seq.
func (q *Quota) Stored(seq uint64, tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[seq]; ok {
		q.sub(tenant, size) // counted already (read from the store meanwhile)
		return
	}
	q.held[seq] = Entry{tenant, size}
}

// Add counts a delivery stored at seq without a reservation (stored again
// by Retry or Replay, or a dead letter sent again).
func (q *Quota) Add(seq uint64, tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[seq]; !ok {
		q.held[seq] = Entry{tenant, size}
		q.used[tenant] += size
	}
}

// Release ends the delivery stored at seq.
func (q *Quota) Release(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.counting {
		q.gone[seq] = true
	}
	e, ok := q.held[seq]
	if !ok {
		return
	}
	delete(q.held, seq)
	q.sub(e.Tenant, e.Size)
}

func (q *Quota) sub(tenant string, size int64) {
	if q.used[tenant] -= size; q.used[tenant] <= 0 {
		delete(q.used, tenant)
	}
}

// UsedBy returns the bytes counted for tenant.
func (q *Quota) UsedBy(tenant string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used[tenant]
}

// Max is the bound per tenant.
func (q *Quota) Max() int64 { return q.max }

// CountOnce runs count, the first count of the deliveries from the store,
// unless it succeeded before; first reports that this call ran it and it
// succeeded.
func (q *Quota) CountOnce(count func() error) (first bool, err error) {
	q.countMu.Lock()
	defer q.countMu.Unlock()
	if q.counted {
		return false, nil
	}
	if err := count(); err != nil {
		return false, err
	}
	q.counted = true
	return true, nil
}

// BeginCount marks a count from the store under way: the sequences
// released meanwhile are remembered, not to be counted from what it read.
// EndCount ends it.
func (q *Quota) BeginCount() {
	q.mu.Lock()
	q.counting = true
	q.mu.Unlock()
}

// EndCount makes found (the deliveries read from the store, up to last)
// the counts: those stored after last keep theirs, those released during
// the count go, and the reservations under way stay. With found nil (a
// count that failed) it only ends the count.
func (q *Quota) EndCount(found map[uint64]Entry, last uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer func() {
		q.counting = false
		clear(q.gone)
	}()
	if found == nil {
		return
	}
	for seq, e := range q.held {
		if seq > last {
			found[seq] = e
		}
	}
	for seq := range q.gone {
		delete(found, seq)
	}
	reserved := map[string]int64{}
	for t, n := range q.used {
		reserved[t] = n
	}
	for _, e := range q.held {
		reserved[e.Tenant] -= e.Size
	}
	q.held, q.used = found, map[string]int64{}
	for t, n := range reserved {
		if n > 0 {
			q.used[t] = n
		}
	}
	for _, e := range found {
		q.used[e.Tenant] += e.Size
	}
}
