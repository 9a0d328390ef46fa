package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/promtext"
	"forgehooks.dev/forgehooks/metrics"
)

func rec(event string, status delivery.Status, d time.Duration) delivery.Record {
	return delivery.Record{Name: event, Status: status, Attempts: []delivery.Attempt{{Number: 1, Duration: d}}}
}

// TestInboxFamilies: attempts by event and outcome, retries, dead letters and
// durations from ObserveAttempt; the gauges from SetInbox; the exposition
// parses strictly; records that are not the end of an attempt count nothing;
// event and tenant labels stay bounded.
func TestInboxFamilies(t *testing.T) {
	m := metrics.New(metrics.Options{MaxEvents: 2, MaxTenants: 1})
	for _, r := range []delivery.Record{
		rec("issues", delivery.StatusRetrying, 10*time.Millisecond),
		rec("issues", delivery.StatusRetrying, 20*time.Millisecond),
		rec("issues", delivery.StatusHandled, 3*time.Millisecond),
		rec("push", delivery.StatusDead, time.Second),
		{Name: "issues", Status: delivery.StatusDead, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}},
		{Name: "issues", Status: delivery.StatusRetrying, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}}, // not dead: not counted
		{Name: "issues", Tenant: "acme", Status: delivery.StatusDead, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}},
		{Name: "issues", Tenant: "acme", Status: delivery.StatusDead, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}},
		{Name: "issues", Tenant: "beta", Status: delivery.StatusDead, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}}, // past MaxTenants
		rec("push", delivery.StatusQueued, 0),
		rec("push", delivery.StatusRunning, 0),
		{Name: "push", Status: delivery.StatusHandled}, // no attempt
		rec("Bad Name", delivery.StatusHandled, 0),
		rec("star", delivery.StatusHandled, 0),  // a third event: past MaxEvents
		rec("watch", delivery.StatusHandled, 0), // and a fourth
	} {
		m.ObserveAttempt(r)
	}
	now := time.Now()
	m.SetInbox(func(context.Context) (metrics.InboxStats, error) {
		return metrics.InboxStats{Waiting: 3, Dead: 1, OldestWaiting: now.Add(-90 * time.Second),
			Duplicates: 5, Replays: 2, IDReuses: 1, Requeued: 4, Unsealed: 6, BadSeals: 7, NotDeliveries: 8}, nil
	})
	var b bytes.Buffer
	m.WriteTo(&b)
	e, err := promtext.Parse(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"forgehooks_inbox_attempts_total", []string{"event", "issues", "outcome", "retrying"}, 3},
		{"forgehooks_inbox_attempts_total", []string{"event", "issues", "outcome", "handled"}, 1},
		{"forgehooks_inbox_attempts_total", []string{"event", "issues", "outcome", "dead"}, 4},
		{"forgehooks_inbox_attempts_total", []string{"event", "push", "outcome", "dead"}, 1},
		{"forgehooks_inbox_attempts_total", []string{"event", metrics.EventOther, "outcome", "handled"}, 3},
		{"forgehooks_inbox_retries_scheduled_total", []string{"event", "issues"}, 3},
		{"forgehooks_inbox_dead_letters_total", []string{"event", "push"}, 1},
		{"forgehooks_inbox_dead_letters_total", []string{"event", "issues"}, 4},
		{"forgehooks_inbox_final_errors_total", []string{"event", "issues"}, 1},
		{"forgehooks_inbox_final_errors_total", []string{"event", "issues", "tenant", "acme"}, 2},
		{"forgehooks_inbox_final_errors_total", []string{"event", "issues", "tenant", metrics.TenantOther}, 1},
		{"forgehooks_inbox_handler_duration_seconds_count", []string{"event", "issues", "outcome", "retrying"}, 3},
		{"forgehooks_inbox_handler_duration_seconds_sum", []string{"event", "issues", "outcome", "retrying"}, 0.03},
		{"forgehooks_inbox_handler_duration_seconds_bucket", []string{"event", "push", "outcome", "dead", "le", "0.5"}, 0},
		{"forgehooks_inbox_handler_duration_seconds_bucket", []string{"event", "push", "outcome", "dead", "le", "1"}, 1},
		{"forgehooks_inbox_backlog", nil, 3},
		{"forgehooks_inbox_dead_letters", nil, 1},
		{"forgehooks_inbox_not_stored_total", []string{"reason", "duplicate"}, 5},
		{"forgehooks_inbox_not_stored_total", []string{"reason", "replay"}, 2},
		{"forgehooks_inbox_not_stored_total", []string{"reason", "id_reuse"}, 1},
		{"forgehooks_inbox_requeued_total", nil, 4},
		{"forgehooks_inbox_refused_total", []string{"reason", "unsealed"}, 6},
		{"forgehooks_inbox_refused_total", []string{"reason", "bad_seal"}, 7},
		{"forgehooks_inbox_refused_total", []string{"reason", "not_a_delivery"}, 8},
	} {
		if got, ok := e.Value(tc.name, tc.labels...); !ok || fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tc.want) {
			t.Errorf("%s%v = %v (%v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if age, _ := e.Value("forgehooks_inbox_oldest_waiting_age_seconds"); age < 90 || age > 120 {
		t.Errorf("oldest waiting age %v, want about 90", age)
	}
	if strings.Contains(b.String(), `outcome="queued"`) || strings.Contains(b.String(), `outcome="running"`) {
		t.Error("a record that ends no attempt was counted")
	}

	// A store that does not answer: the gauges are left out, the rest stays valid.
	m.SetInbox(func(context.Context) (metrics.InboxStats, error) {
		return metrics.InboxStats{}, errors.New("no answer\nat all")
	})
	b.Reset()
	m.WriteTo(&b)
	e, err = promtext.Parse(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if _, ok := e.Value("forgehooks_inbox_backlog"); ok {
		t.Error("a backlog gauge without an answer")
	}
	if _, ok := e.Value("forgehooks_inbox_attempts_total", "event", "issues", "outcome", "handled"); !ok {
		t.Error("the counters went with the gauges")
	}
}

// TestNoInboxNoFamilies: a Metrics without an inbox exports the HTTP families
// only.
func TestNoInboxNoFamilies(t *testing.T) {
	var b bytes.Buffer
	metrics.New(metrics.Options{}).WriteTo(&b)
	if strings.Contains(b.String(), "inbox") {
		t.Errorf("inbox families without an inbox:\n%s", b.String())
	}
}
