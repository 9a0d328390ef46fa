package metrics

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/webhooks"
)

// Outcomes of an inbox attempt, the values of the outcome label: the status
// the attempt left its delivery in.
const (
	OutcomeHandled  = "handled"  // the handlers succeeded
	OutcomeRetrying = "retrying" // they failed; a retry is scheduled
	OutcomeDead     = "dead"     // they failed the last time: a dead letter
)

// InboxStats is what a scrape reads of a durable inbox (see SetInbox).
type InboxStats struct {
	// Waiting counts the stored deliveries not finished (not yet taken,
	// running, or waiting for a retry); Dead the dead letters held.
	Waiting, Dead int64
	// OldestWaiting is when the oldest delivery still waiting was stored;
	// zero when none waits.
	OldestWaiting time.Time
	// Duplicates, Replays and IDReuses count the deliveries answered
	// duplicate since the inbox opened: an id already stored, a body already
	// stored under another id, an id already stored with another body.
	// Requeued counts redeliveries that ran a dead letter again.
	Duplicates, Replays, IDReuses, Requeued uint64
	// Unsealed, BadSeals and NotDeliveries count the stored messages the
	// workers refused to run since the inbox opened (each a dead letter at
	// once): no seal, a seal that does not hold, not a delivery.
	Unsealed, BadSeals, NotDeliveries uint64
}

// inboxMetrics are the inbox's families: attempts by event and outcome and
// their durations, filled by ObserveAttempt; the gauges read at each scrape.
type inboxMetrics struct {
	mu       sync.Mutex
	attempts map[attemptKey]*series // counts and durations
	final    map[finalKey]uint64    // dead letters of a final error, by event and tenant
	stats    func(context.Context) (InboxStats, error)
}

type attemptKey struct{ event, outcome string }

// finalKey labels a final error: its event, and its tenant ("": none), so
// that a tenant configured wrong (no installation or token: every delivery
// of it final) shows as that tenant.
type finalKey struct{ event, tenant string }

// ObserveAttempt counts a finished attempt of a stored delivery: call it
// with each record an inbox's Watch gives (it ignores those whose status is
// not handled, retrying or dead, which are not the end of an attempt).
func (m *Metrics) ObserveAttempt(rec delivery.Record) {
	var outcome string
	switch rec.Status {
	case delivery.StatusHandled:
		outcome = OutcomeHandled
	case delivery.StatusRetrying:
		outcome = OutcomeRetrying
	case delivery.StatusDead:
		outcome = OutcomeDead
	default:
		return
	}
	if len(rec.Attempts) == 0 {
		return
	}
	d := max(rec.Attempts[len(rec.Attempts)-1].Duration, 0)
	event := EventLabel(webhooks.Result{Verified: true, Name: rec.Name})
	m.mu.Lock()
	if event != EventOther && !m.events[event] {
		if len(m.events) >= m.maxEvents {
			event = EventOther
		} else {
			m.events[event] = true
		}
	}
	m.mu.Unlock()
	k := attemptKey{event, outcome}
	m.inbox.mu.Lock()
	if m.inbox.attempts == nil {
		m.inbox.attempts = map[attemptKey]*series{}
	}
	s := m.inbox.attempts[k]
	if s == nil {
		s = &series{counts: make([]atomic.Uint64, len(m.bounds)+1)}
		m.inbox.attempts[k] = s
	}
	m.inbox.mu.Unlock()
	if outcome == OutcomeDead && rec.Final() {
		fk := finalKey{event, m.tenantLabel(rec.Tenant)}
		m.inbox.mu.Lock()
		if m.inbox.final == nil {
			m.inbox.final = map[finalKey]uint64{}
		}
		m.inbox.final[fk]++
		m.inbox.mu.Unlock()
	}
	s.observe(m.bounds, d)
}

// SetInbox makes every scrape read the inbox's backlog, oldest waiting
// delivery and dead letters with stats (an inbox's Stats, adapted). A
// scrape waits for it at most 5 s; on an error those three gauges are left
// out of that scrape.
func (m *Metrics) SetInbox(stats func(context.Context) (InboxStats, error)) {
	m.inbox.mu.Lock()
	defer m.inbox.mu.Unlock()
	m.inbox.stats = stats
}

// writeInbox writes the inbox's families, when there is an inbox.
func (m *Metrics) writeInbox(b *bytes.Buffer, now time.Time) {
	m.inbox.mu.Lock()
	stats := m.inbox.stats
	type snap struct {
		attemptKey
		counts []uint64
		total  uint64
		sum    float64
	}
	var snaps []snap
	for k, s := range m.inbox.attempts {
		sn := snap{attemptKey: k, counts: make([]uint64, len(s.counts)), sum: math.Float64frombits(s.sum.Load())}
		for i := range s.counts {
			sn.counts[i] = s.counts[i].Load()
			sn.total += sn.counts[i]
		}
		snaps = append(snaps, sn)
	}
	finalKeys := make([]finalKey, 0, len(m.inbox.final))
	for k := range m.inbox.final {
		finalKeys = append(finalKeys, k)
	}
	slices.SortFunc(finalKeys, func(a, b finalKey) int {
		return cmp.Or(cmp.Compare(a.event, b.event), cmp.Compare(a.tenant, b.tenant))
	})
	finals := make([]uint64, len(finalKeys))
	for i, k := range finalKeys {
		finals[i] = m.inbox.final[k]
	}
	m.inbox.mu.Unlock()
	if stats == nil && len(snaps) == 0 {
		return
	}
	slices.SortFunc(snaps, func(a, b snap) int {
		return cmp.Or(cmp.Compare(a.event, b.event), cmp.Compare(a.outcome, b.outcome))
	})
	ns := m.ns
	fmt.Fprintf(b, "# HELP %s_inbox_attempts_total Finished runs of stored deliveries' handlers, by event and outcome (handled; retrying: failed, a retry scheduled; dead: failed the last time).\n", ns)
	fmt.Fprintf(b, "# TYPE %s_inbox_attempts_total counter\n", ns)
	for _, s := range snaps {
		fmt.Fprintf(b, "%s_inbox_attempts_total{event=\"%s\",outcome=\"%s\"} %d\n", ns, escape(s.event), s.outcome, s.total)
	}
	for _, f := range []struct{ name, help, outcome string }{
		{"retries_scheduled_total", "Retries scheduled after a failed attempt, by event.", OutcomeRetrying},
		{"dead_letters_total", "Deliveries moved to the dead letters after their last attempt failed, by event.", OutcomeDead},
	} {
		fmt.Fprintf(b, "# HELP %s_inbox_%s %s\n# TYPE %s_inbox_%s counter\n", ns, f.name, f.help, ns, f.name)
		for _, s := range snaps {
			if s.outcome == f.outcome {
				fmt.Fprintf(b, "%s_inbox_%s{event=\"%s\"} %d\n", ns, f.name, escape(s.event), s.total)
			}
		}
	}
	fmt.Fprintf(b, "# HELP %s_inbox_final_errors_total Deliveries moved to the dead letters without a retry because their handlers' error was final (webhooks.Permanent), by event and, with tenants, tenant.\n# TYPE %s_inbox_final_errors_total counter\n", ns, ns)
	for i, k := range finalKeys {
		l := `event="` + escape(k.event) + `"`
		if k.tenant != "" {
			l += `,tenant="` + escape(k.tenant) + `"`
		}
		fmt.Fprintf(b, "%s_inbox_final_errors_total{%s} %d\n", ns, l, finals[i])
	}
	h := ns + "_inbox_handler_duration_seconds"
	fmt.Fprintf(b, "# HELP %s Duration of each run of a stored delivery's handlers, by event and outcome.\n# TYPE %s histogram\n", h, h)
	for _, s := range snaps {
		l := `event="` + escape(s.event) + `",outcome="` + s.outcome + `"`
		var cum uint64
		for i, le := range m.les {
			cum += s.counts[i]
			fmt.Fprintf(b, "%s_bucket{%s,le=\"%s\"} %d\n", h, l, le, cum)
		}
		fmt.Fprintf(b, "%s_sum{%s} %s\n%s_count{%s} %d\n", h, l, formatFloat(s.sum), h, l, s.total)
	}
	if stats == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := stats(ctx)
	if err != nil {
		return // a missing series is what a scraper reads as unknown
	}
	age := 0.0
	if !st.OldestWaiting.IsZero() {
		age = max(now.Sub(st.OldestWaiting).Seconds(), 0)
	}
	for _, g := range []struct {
		name, help string
		v          float64
	}{
		{"inbox_backlog", "Stored deliveries not finished: waiting for a worker, running, or waiting for a retry.", float64(st.Waiting)},
		{"inbox_oldest_waiting_age_seconds", "Age of the oldest stored delivery not finished; 0 when none waits.", age},
		{"inbox_dead_letters", "Dead letters held, waiting for a retry.", float64(st.Dead)},
	} {
		fmt.Fprintf(b, "# HELP %s_%s %s\n# TYPE %s_%s gauge\n%s_%s %s\n", ns, g.name, g.help, ns, g.name, ns, g.name, formatFloat(g.v))
	}
	fmt.Fprintf(b, "# HELP %s_inbox_not_stored_total Deliveries answered duplicate and not stored, by reason (duplicate: the id is stored; replay: the body is stored under another id; id_reuse: the id is stored with another body).\n# TYPE %s_inbox_not_stored_total counter\n", ns, ns)
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"duplicate", st.Duplicates}, {"id_reuse", st.IDReuses}, {"replay", st.Replays}} {
		fmt.Fprintf(b, "%s_inbox_not_stored_total{reason=\"%s\"} %d\n", ns, r.reason, r.n)
	}
	fmt.Fprintf(b, "# HELP %s_inbox_refused_total Stored messages the workers refused to run, each a dead letter at once, by reason (unsealed: no seal; bad_seal: a seal that does not hold under the inbox key; not_a_delivery: headers missing or a body that is not a JSON object). Any but 0 means something without the inbox key publishes on the inbox's subjects.\n# TYPE %s_inbox_refused_total counter\n", ns, ns)
	for _, r := range []struct {
		reason string
		n      uint64
	}{{"bad_seal", st.BadSeals}, {"not_a_delivery", st.NotDeliveries}, {"unsealed", st.Unsealed}} {
		fmt.Fprintf(b, "%s_inbox_refused_total{reason=\"%s\"} %d\n", ns, r.reason, r.n)
	}
	fmt.Fprintf(b, "# HELP %s_inbox_requeued_total Redeliveries of a dead letter that made it run again.\n# TYPE %s_inbox_requeued_total counter\n%s_inbox_requeued_total %d\n", ns, ns, ns, st.Requeued)
}
