package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// ErrTenantFull is wrapped by the error of Enqueue when the delivery's tenant
// holds Options.TenantMaxStoreBytes of deliveries not yet ended; the
// middleware answers 503, and the forge's delivery log shows it failed.
var ErrTenantFull = errors.New("inbox: the tenant's share of the store is full")

// A bound per tenant of the store.
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
// tenantRecountEvery.

// tenantRecountEvery is how often a receiver of a cluster reads the counts
// again.
const tenantRecountEvery = time.Minute

// tenantQuota counts the bytes of each tenant's deliveries not yet ended.
type tenantQuota struct {
	max int64 // <= 0: no bound

	countMu sync.Mutex // held by the first count
	counted bool       // the first count, from the store, is done

	mu   sync.Mutex
	held map[uint64]quotaEntry // by stream sequence
	used map[string]int64      // by tenant, with the reservations of Enqueue
	// While the store is read: the sequences ended meanwhile, not to be
	// counted from what was read.
	counting bool
	gone     map[uint64]bool
}

type quotaEntry struct {
	tenant string
	size   int64
}

func newTenantQuota(max int64) *tenantQuota {
	return &tenantQuota{max: max, held: map[uint64]quotaEntry{}, used: map[string]int64{}, gone: map[uint64]bool{}}
}

// reserve takes size bytes of tenant's share for a delivery about to be
// stored; false when they do not fit. The caller ends the reservation with
// stored or unreserve.
func (q *tenantQuota) reserve(tenant string, size int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used[tenant]+size > q.max {
		return false
	}
	q.used[tenant] += size
	return true
}

// unreserve gives back a reservation whose delivery was not stored.
func (q *tenantQuota) unreserve(tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sub(tenant, size)
}

// stored turns a reservation into the delivery stored at seq.
func (q *tenantQuota) stored(seq uint64, tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[seq]; ok {
		q.sub(tenant, size) // counted already (read from the store meanwhile)
		return
	}
	q.held[seq] = quotaEntry{tenant, size}
}

// add counts a delivery stored at seq without a reservation (stored again
// by Retry or Replay, or a dead letter sent again).
func (q *tenantQuota) add(seq uint64, tenant string, size int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[seq]; !ok {
		q.held[seq] = quotaEntry{tenant, size}
		q.used[tenant] += size
	}
}

// release ends the delivery stored at seq.
func (q *tenantQuota) release(seq uint64) {
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
	q.sub(e.tenant, e.size)
}

func (q *tenantQuota) sub(tenant string, size int64) {
	if q.used[tenant] -= size; q.used[tenant] <= 0 {
		delete(q.used, tenant)
	}
}

// usedBy returns the bytes counted for tenant.
func (q *tenantQuota) usedBy(tenant string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used[tenant]
}

// recount reads the tenants' deliveries not yet ended from the store and
// makes them the counts of the sequences up to the last stored when it
// began; those stored later keep their counts.
func (in *Inbox) recount(ctx context.Context) error {
	q := in.quota
	info, err := in.inbox.Info(ctx)
	if err != nil {
		return err
	}
	last := info.State.LastSeq
	from := in.pendingFrom(ctx, info.State.FirstSeq)
	q.mu.Lock()
	q.counting = true
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.counting = false
		clear(q.gone)
		q.mu.Unlock()
	}()
	found := map[uint64]quotaEntry{}
	for from <= last && from > 0 {
		msgs, err := in.headers(ctx, in.inbox, from, min(last, from+9999))
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			tenant := m.header.Get(stored.HeaderTenant)
			if tenant == "" {
				continue
			}
			token := stored.TokenOf(m.header, m.subject)
			st := in.loadStatus(ctx, stored.StatusKey(m.header, token, m.seq))
			if st != nil && (st.Seq > m.seq || st.Seq == m.seq && (st.Status == delivery.StatusHandled || st.Status == delivery.StatusDead)) {
				continue // ended, or stored again since
			}
			found[m.seq] = quotaEntry{tenant, int64(m.size)}
		}
		from = msgs[len(msgs)-1].seq + 1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for seq, e := range q.held {
		if seq > last {
			found[seq] = e
		}
	}
	for seq := range q.gone {
		delete(found, seq)
	}
	// The reservations under way stay: the bytes counted are those found
	// and those reserved.
	reserved := map[string]int64{}
	for t, n := range q.used {
		reserved[t] = n
	}
	for _, e := range q.held {
		reserved[e.tenant] -= e.size
	}
	q.held, q.used = found, map[string]int64{}
	for t, n := range reserved {
		if n > 0 {
			q.used[t] = n
		}
	}
	for _, e := range found {
		q.used[e.tenant] += e.size
	}
	return nil
}

// pendingFrom returns the first stream sequence that may hold a delivery
// not yet ended: past the acknowledged floor of the workers' consumer and of
// each partition's, and no later than the head of any order key; first (the
// stream's first) when the workers' consumer is not there yet.
func (in *Inbox) pendingFrom(ctx context.Context, first uint64) uint64 {
	from, workers := uint64(0), false
	list := in.inbox.ListConsumers(ctx)
	for ci := range list.Info() {
		if ci.Name == in.workersConsumer() {
			workers = true
		} else if !strings.HasPrefix(ci.Name, in.orderConsumerPrefix()) {
			continue
		}
		if f := ci.AckFloor.Stream + 1; from == 0 || f < from {
			from = f
		}
	}
	if list.Err() != nil || !workers {
		return first
	}
	from = max(from, first)
	if in.keyBucket == nil {
		return from
	}
	keys, err := in.keyBucket.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return from
		}
		return first
	}
	defer func() { _ = keys.Stop() }()
	for name := range keys.Keys() {
		e, err := in.keyBucket.Get(ctx, name)
		if err != nil {
			return first
		}
		var rec runner.KeyRecord
		if json.Unmarshal(e.Value(), &rec) == nil && rec.Head > 0 {
			from = min(from, max(rec.Head, first))
		}
	}
	return from
}

// checkTenant reserves the share of the store of a tenant's delivery about
// to be stored; the returned func ends the reservation (stored at seq, or
// not stored: seq 0). It counts the tenants' deliveries first, once.
func (in *Inbox) checkTenant(ctx context.Context, tenant string, size int64) (func(seq uint64), error) {
	q := in.quota
	if q == nil || tenant == "" {
		return func(uint64) {}, nil
	}
	q.countMu.Lock()
	if !q.counted {
		if err := in.recount(ctx); err != nil {
			q.countMu.Unlock()
			return nil, fmt.Errorf("counting the tenants' deliveries: %w", err)
		}
		q.counted = true
		if in.ns == nil {
			go in.recountLoop()
		}
	}
	q.countMu.Unlock()
	if !q.reserve(tenant, size) {
		return nil, fmt.Errorf("%w: tenant %q holds %d bytes not yet handled, the bound is %d (Options.TenantMaxStoreBytes, serve --tenant-max-store-bytes)",
			ErrTenantFull, tenant, q.usedBy(tenant), q.max)
	}
	return func(seq uint64) {
		if seq == 0 {
			q.unreserve(tenant, size)
		} else {
			q.stored(seq, tenant, size)
		}
	}, nil
}

// recountLoop reads the counts again every tenantRecountEvery until Close:
// in a cluster other processes end deliveries too.
func (in *Inbox) recountLoop() {
	t := time.NewTicker(tenantRecountEvery)
	defer t.Stop()
	for {
		select {
		case <-in.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), tenantRecountEvery)
		if err := in.recount(ctx); err != nil && !in.isClosed() {
			in.log.Warn("inbox: counting the tenants' deliveries", "error", err)
		}
		cancel()
	}
}
