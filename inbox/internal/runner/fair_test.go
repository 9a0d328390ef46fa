package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestFairShare: the due keys are ordered so that each next one is of the
// tenant with the fewest running.
func TestFairShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cands   string // tenant of each candidate, oldest first ("-": none)
		running map[string]int
		want    string
	}{
		{"one tenant keeps its order", "aaaa", nil, "aaaa"},
		{"a backlog and a newcomer take turns", "aaaab", nil, "abaaa"},
		{"the newcomer first when the backlog runs", "aaaabb", map[string]int{"a": 2}, "bbaaaa"},
		{"three tenants", "aaabbc", nil, "abcaba"},
		{"without a tenant is a group", "aa--", map[string]int{"a": 1}, "-a-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cands []string
			for i, c := range tc.cands {
				cands = append(cands, fmt.Sprintf("%c%d", c, i))
			}
			running := map[string]int{}
			for k, v := range tc.running {
				running[k] = v
			}
			got := fairShare(cands, func(s string) string {
				if s[0] == '-' {
					return ""
				}
				return s[:1]
			}, running)
			var b strings.Builder
			for _, s := range got {
				b.WriteByte(s[0])
			}
			if b.String() != tc.want {
				t.Errorf("order %s (%v), want %s", b.String(), got, tc.want)
			}
			// Each tenant's candidates keep their order.
			for _, tenant := range "ab-" {
				var sub []string
				for _, s := range got {
					if rune(s[0]) == tenant {
						sub = append(sub, s)
					}
				}
				if !slices.IsSortedFunc(sub, func(x, y string) int { return strings.Compare(x[1:], y[1:]) }) && len(sub) > 1 {
					t.Errorf("tenant %c out of order: %v", tenant, sub)
				}
			}
		})
	}
}

// TestFairQueue: a worker that frees up takes a delivery of the tenant with
// the fewest running, turns among those tied, each tenant's in the order
// queued; after close nothing is queued and pushes are refused.
func TestFairQueue(t *testing.T) {
	q := newFairQueue()
	var all []*fakeMsg
	push := func(tenant string, n int) {
		for range n {
			m := &fakeMsg{data: []byte(tenant + fmt.Sprint(len(all)))}
			all = append(all, m)
			if !q.push(queuedMsg{msg: m, tenant: tenant}) {
				t.Fatal("push refused")
			}
		}
	}
	push("a", 6)
	pop := func() string {
		m, ok := q.pop()
		if !ok {
			return "none"
		}
		return string(m.msg.Data())
	}
	// a alone: every worker.
	for i, want := range []string{"a0", "a1", "a2"} {
		if got := pop(); got != want {
			t.Fatalf("pop %d: %s, want %s", i, got, want)
		}
	}
	push("b", 2)
	push("", 1)
	// a runs three: b and the group without a tenant come first.
	for i, want := range []string{"b6", "8", "b7", "a3"} {
		if got := pop(); got != want {
			t.Fatalf("pop %d: %s, want %s", i, got, want)
		}
	}
	q.done("a")
	q.done("a")
	q.done("a")
	if got := pop(); got != "a4" {
		t.Fatalf("pop: %s, want a4", got)
	}
	if left := q.close(); len(left) != 1 || string(left[0].msg.Data()) != "a5" {
		t.Fatalf("close left %d", len(left))
	}
	if q.push(queuedMsg{msg: &fakeMsg{}, tenant: "a"}) {
		t.Error("push after close taken")
	}
	if got := pop(); got != "none" {
		t.Errorf("pop after close: %s", got)
	}
}

// TestFairQueueSharedFirst: within a tenant's group, the deliveries fetched
// from the workers' consumer run before those of the tenant's own consumer
// fetched earlier, since other tenants' deliveries wait behind them on the
// shared subject; each source's keep their order.
func TestFairQueueSharedFirst(t *testing.T) {
	q := newFairQueue()
	shared, own := &source{}, &source{tenant: true}
	for _, m := range []struct {
		id  string
		src *source
	}{{"o1", own}, {"o2", own}, {"s1", shared}, {"o3", own}, {"s2", shared}} {
		q.push(queuedMsg{msg: &fakeMsg{data: []byte(m.id)}, src: m.src, tenant: "a"})
	}
	var got []string
	for {
		m, ok := q.pop()
		if !ok {
			break
		}
		got = append(got, string(m.msg.Data()))
	}
	if want := []string{"s1", "s2", "o1", "o2", "o3"}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}

// fakeMsg is a message for the queue's own test: Data only.
type fakeMsg struct {
	jetstream.Msg
	data []byte
}

func (m *fakeMsg) Data() []byte { return m.data }
