package inspector_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
	"github.com/chromedp/chromedp"
)

// storeSource is a Source over records held in a slice, standing in for a
// durable inbox (which has retries and dead letters the Ring has not): Retry
// queues a dead letter again, as the inbox does, and tells the watchers.
type storeSource struct {
	delivery.Watchers
	mu      sync.Mutex
	recs    []delivery.Record // ascending Seq
	retried []string
}

func (s *storeSource) List(_ context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []delivery.Record
	for _, r := range slices.Backward(s.recs) {
		if (o.Before == 0 || r.Seq < o.Before) && (o.Status == "" || r.Status == o.Status) && (o.Name == "" || r.Name == o.Name) && len(out) < max(o.Limit, 1) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *storeSource) Get(_ context.Context, id string) (delivery.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.ID == id {
			return r, nil
		}
	}
	return delivery.Record{}, delivery.ErrNotFound
}

func (s *storeSource) Retry(_ context.Context, id string) error {
	s.mu.Lock()
	var changed delivery.Record
	for i := range s.recs {
		if s.recs[i].ID == id {
			if s.recs[i].Status != delivery.StatusDead {
				s.mu.Unlock()
				return delivery.ErrNotDead
			}
			s.recs[i].Status = delivery.StatusQueued
			changed = s.recs[i]
		}
	}
	s.retried = append(s.retried, id)
	s.mu.Unlock()
	s.Notify(changed)
	return nil
}

func (s *storeSource) Replay(context.Context, string) error { return delivery.ErrUnsupported }

func newStoreSource() *storeSource {
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	payload := []byte(`{"action":"opened","repository":{"full_name":"o/r"},"sender":{"login":"u"}}`)
	attempts := func(n int) []delivery.Attempt {
		var as []delivery.Attempt
		for i := range n {
			as = append(as, delivery.Attempt{Number: i + 1, Start: t0.Add(time.Duration(i) * time.Minute), Duration: time.Millisecond, Err: fmt.Sprint("upstream 503 on attempt ", i+1)})
		}
		return as
	}
	return &storeSource{recs: []delivery.Record{
		{ID: "dead-1", Name: "issues", Action: "opened", Payload: payload, ReceivedAt: t0, Status: delivery.StatusDead, Verified: true, Attempts: attempts(8), MaxAttempts: 8, Seq: 1},
		{ID: "retrying-1", Name: "issues", Action: "opened", Payload: payload, ReceivedAt: t0.Add(time.Second), Status: delivery.StatusRetrying, Verified: true, Attempts: attempts(3), MaxAttempts: 8, Seq: 2},
		{ID: "retrying-2", Name: "push", Payload: []byte(`{}`), ReceivedAt: t0.Add(1500 * time.Millisecond), Status: delivery.StatusRetrying, Verified: true, Attempts: attempts(10), MaxAttempts: 8, Seq: 3},
		{ID: "queued-1", Name: "push", Payload: []byte(`{}`), ReceivedAt: t0.Add(2 * time.Second), Status: delivery.StatusQueued, Verified: true, Seq: 4},
	}}
}

// TestSourceStatuses: with a Source, the list shows its statuses (retrying
// n/N, dead) merged with the rejected requests OnResult keeps, while OnResult
// keeps no verified delivery itself (the Source stores those).
func TestSourceStatuses(t *testing.T) {
	t.Parallel()
	src := newStoreSource()
	// A dead letter whose handlers' error was final (webhooks.Permanent).
	src.recs = append(src.recs, delivery.Record{ID: "final-1", Name: "issues", Action: "opened", Payload: []byte(`{}`), ReceivedAt: src.recs[0].ReceivedAt.Add(3 * time.Second),
		Status: delivery.StatusDead, Verified: true, Attempts: []delivery.Attempt{{Number: 1, Err: "no", Final: true}}, MaxAttempts: 8, Seq: 5})
	insp := inspector.New(inspector.Options{Store: src})
	defer insp.Close()
	insp.OnResult(webhooks.Result{ID: "ok-1", Name: "issues", Status: 202, Verified: true, Payload: []byte(`{}`), ReceivedAt: time.Now()})
	insp.OnResult(webhooks.Result{ID: "bad-1", Name: "issues", Status: 400, ReceivedAt: time.Now()})
	insp.OnResult(webhooks.Result{ID: "dup-1", Name: "issues", Status: 200, Verified: true, Duplicate: true, ReceivedAt: time.Now()})
	// An inbox's middleware answers a duplicate 200 (a stored delivery 202),
	// also where it does not set Duplicate.
	insp.OnResult(webhooks.Result{ID: "dup-2", Name: "issues", Status: 200, Verified: true, Payload: []byte(`{}`), ReceivedAt: time.Now()})
	var p struct {
		Rows []struct{ ID, StatusText string }
	}
	getJSON(t, insp, "/api/deliveries", &p)
	var got []string
	for _, r := range p.Rows {
		got = append(got, r.ID+"="+r.StatusText)
	}
	if want := "dup-2=duplicate,dup-1=duplicate,bad-1=rejected 400,final-1=dead (final),queued-1=queued,retrying-2=retrying (attempt 10),retrying-1=retrying 3/8,dead-1=dead"; strings.Join(got, ",") != want {
		t.Errorf("rows %s\nwant %s", strings.Join(got, ","), want)
	}
	if insp.Ring() != nil {
		t.Error("a Ring beside a Source")
	}
	var d struct {
		AttemptList []struct {
			Error string
			Final bool
		}
	}
	getJSON(t, insp, "/api/delivery?key=d:final-1", &d)
	if len(d.AttemptList) != 1 || !d.AttemptList[0].Final || d.AttemptList[0].Error != "no" {
		t.Errorf("the final dead letter's attempts: %+v", d.AttemptList)
	}
}

// TestBrowserDeadLetter retries a dead letter of a Source from the page: the
// button calls Source.Retry, and the row turns queued live. (With the inbox
// on main, the same runs over inbox.Inbox through its adapter.)
func TestBrowserDeadLetter(t *testing.T) {
	t.Parallel()
	src := newStoreSource()
	insp := inspector.New(inspector.Options{Store: src})
	srv := httptest.NewServer(insp)
	t.Cleanup(func() { insp.Close(); srv.Close() })
	ctx := browser(t)
	do(t, ctx, "open the page", chromedp.Navigate(srv.URL+"/"))
	until(t, ctx, "the rows", `document.getElementById('live').dataset.state === 'live' && document.querySelectorAll('#tbody tr').length === 4`)
	if s := eval[string](t, ctx, `document.querySelector(`+jsString(rowSel("d:retrying-1"))+`).innerText`); !strings.Contains(s, "retrying 3/8") {
		t.Errorf("retrying row %q", s)
	}
	do(t, ctx, "open the dead letter", chromedp.Click(chromedp.CSS(rowSel("d:dead-1")+" a.open")))
	until(t, ctx, "its 8 attempts", `document.querySelectorAll('#d-attempts li').length === 8 && !document.getElementById('a-retry').disabled`)
	if e := eval[string](t, ctx, `document.querySelectorAll('#d-attempts pre.err')[7].textContent`); e != "upstream 503 on attempt 8" {
		t.Errorf("last attempt error %q", e)
	}
	do(t, ctx, "retry", chromedp.Click(chromedp.ID("a-retry")))
	until(t, ctx, "retried", `document.getElementById('a-result').textContent === 'retry: done' && document.getElementById('d-summary').innerText.includes('queued')`)
	do(t, ctx, "back", chromedp.Click(chromedp.ID("back")))
	until(t, ctx, "the row queued", `document.querySelector(`+jsString(rowSel("d:dead-1"))+`).dataset.status === 'queued'`)
	src.mu.Lock()
	defer src.mu.Unlock()
	if fmt.Sprint(src.retried) != "[dead-1]" {
		t.Errorf("retried %v", src.retried)
	}
	if v := violations(t, ctx); len(v) != 0 {
		t.Errorf("CSP violations: %q", v)
	}
}
