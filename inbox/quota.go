package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/quota"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// ErrTenantFull is wrapped by the error of Enqueue when the delivery's tenant
// holds Options.TenantMaxStoreBytes of deliveries not yet ended; the
// middleware answers 503, and the forge's delivery log shows it failed.
var ErrTenantFull = errors.New("inbox: the tenant's share of the store is full")

// tenantRecountEvery is how often a receiver of a cluster reads the counts
// again.
const tenantRecountEvery = time.Minute

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
	q.BeginCount()
	found := map[uint64]quota.Entry{}
	defer func() { q.EndCount(found, last) }()
	for from <= last && from > 0 {
		msgs, err := in.headers(ctx, in.inbox, from, min(last, from+9999))
		if err != nil {
			found = nil
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
			found[m.seq] = quota.Entry{Tenant: tenant, Size: int64(m.size)}
		}
		from = msgs[len(msgs)-1].seq + 1
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
		} else if !runner.HoldsDeliveries(in.opts.Name, ci.Name) {
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
	first, err := q.CountOnce(func() error { return in.recount(ctx) })
	if err != nil {
		return nil, fmt.Errorf("counting the tenants' deliveries: %w", err)
	}
	if first && in.ns == nil {
		go in.recountLoop()
	}
	if !q.Reserve(tenant, size) {
		return nil, fmt.Errorf("%w: tenant %q holds %d bytes not yet handled, the bound is %d (Options.TenantMaxStoreBytes, serve --tenant-max-store-bytes)",
			ErrTenantFull, tenant, q.UsedBy(tenant), q.Max())
	}
	return func(seq uint64) {
		if seq == 0 {
			q.Unreserve(tenant, size)
		} else {
			q.Stored(seq, tenant, size)
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
