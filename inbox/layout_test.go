package inbox

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestLayoutFixedSubjects: the inbox stream's subjects do not grow with the
// deliveries (JetStream keeps an index entry in memory per subject; one per
// group of a tenant with a backlog), with and without order, and every delivery is still found by id, before and
// after it ran, and after a Replay stored it again.
func TestLayoutFixedSubjects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		order   OrderKey
		maxSubj uint64
	}{
		// The shared subject, and the own subject of the deliveries
		// without a tenant once 8 of them wait (package overflow).
		{"unordered", nil, 1 + 1},
		{"ordered", ByRepository, 1 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := newWebhooks(t)
			s := newSeen()
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				info, _ := webhooks.DeliveryFrom(ctx)
				s.add(info)
				return nil
			})
			in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: tc.order, OrderPartitions: 4})
			ctx := context.Background()
			const n = 40
			for i := range n {
				id := fmt.Sprintf("d-%d", i)
				body := fmt.Appendf(nil, `{"n":%d,"repository":{"id":%d,"full_name":"o/r%d"}}`, i, i%7, i%7)
				if i%5 == 0 {
					body = fmt.Appendf(nil, `{"n":%d}`, i) // no key: unordered
				}
				if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "push", Payload: body}); err != nil {
					t.Fatal(err)
				}
			}
			si, err := in.inbox.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if si.State.NumSubjects > tc.maxSubj {
				t.Errorf("%d deliveries on %d subjects, want at most %d", n, si.State.NumSubjects, tc.maxSubj)
			}
			waitFor(t, 10*time.Second, "every delivery handled", func() bool { return s.count() == n })
			for i := range n {
				id := fmt.Sprintf("d-%d", i)
				r, err := in.Get(ctx, id)
				if err != nil || r.ID != id || r.Status != delivery.StatusHandled || len(r.Payload) == 0 {
					t.Fatalf("get %s: %+v %v", id, r.Status, err)
				}
				if ok, err := in.Holds(ctx, id); !ok || err != nil {
					t.Fatalf("holds %s: %v %v", id, ok, err)
				}
			}
			if err := in.Replay(ctx, "d-3"); err != nil {
				t.Fatal(err)
			}
			r, err := in.Get(ctx, "d-3")
			if err != nil {
				t.Fatal(err)
			}
			if r.Seq <= uint64(n) {
				t.Errorf("after Replay, get finds seq %d, want the new copy (> %d)", r.Seq, n)
			}
			waitFor(t, 10*time.Second, "the replay handled", func() bool { return len(s.get("d-3")) == 2 })
			if _, err := in.Get(ctx, "unknown"); err == nil {
				t.Error("get of an id never stored: no error")
			}
		})
	}
}

// TestLayoutReadsSubjectPerDelivery: a store written with a subject per
// delivery (Name.in.<token>, Name.in.p<N>.<token>) is still read: its
// deliveries run, are found by id and listed, and are duplicates by id.
func TestLayoutReadsSubjectPerDelivery(t *testing.T) {
	wh := newWebhooks(t)
	s := newSeen()
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		s.add(info)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, OrderPartitions: 2})
	ctx := context.Background()
	for i, subj := range []string{"", "p1."} {
		id := "old-" + strconv.Itoa(i)
		body := []byte(`{"repository":{"id":1,"full_name":"o/r"},"n":` + strconv.Itoa(i) + `}`)
		m := &nats.Msg{Subject: in.inSubj + subj + stored.SubjectToken(id), Data: body, Header: nats.Header{}}
		m.Header.Set(stored.HeaderVersion, "1")
		m.Header.Set(stored.HeaderEvent, "push")
		m.Header.Set(stored.HeaderDelivery, id)
		m.Header.Set(stored.HeaderReceivedAt, time.Now().UTC().Format(time.RFC3339Nano))
		if subj != "" {
			m.Header.Set(stored.HeaderPartition, "p1")
		}
		in.seal(m) // the layout is under test, not the seal
		if _, err := in.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the old deliveries handled", func() bool {
		return len(s.get("old-0")) == 1 && len(s.get("old-1")) == 1
	})
	for _, id := range []string{"old-0", "old-1"} {
		waitFor(t, 5*time.Second, id+" handled in its status", func() bool {
			r, err := in.Get(ctx, id)
			return err == nil && r.ID == id && r.Status == delivery.StatusHandled
		})
		if ok, err := in.Holds(ctx, id); !ok || err != nil {
			t.Errorf("holds %s: %v %v", id, ok, err)
		}
	}
	l, err := in.List(ctx, delivery.ListOptions{})
	if err != nil || len(l) != 2 {
		t.Fatalf("list: %d records, %v", len(l), err)
	}
}

// TestLanded: after a publish whose answer was lost, landed tells whether
// the store holds the delivery by publishing it again under its message id:
// stored before (the store names that copy), stored now, or held under
// another id (a body stored by another delivery: not this one, nil).
func TestLanded(t *testing.T) {
	in := openInbox(t, t.TempDir(), Options{})
	ctx := context.Background()
	msgOf := func(id string, body []byte) *nats.Msg {
		return messageOf(t, in, webhooks.Delivery{ID: id, Name: "push", Payload: body}, bodyDigest(body))
	}
	first := msgOf("lost-answer", []byte(`{"n":1}`))
	ack, err := in.js.PublishMsg(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.landed(msgOf("lost-answer", []byte(`{"n":1}`)), "lost-answer"); got == nil || got.Sequence != ack.Sequence {
		t.Errorf("stored before: landed %+v, want seq %d", got, ack.Sequence)
	}
	if got := in.landed(msgOf("never-sent", []byte(`{"n":2}`)), "never-sent"); got == nil || got.Sequence <= ack.Sequence {
		t.Errorf("not stored before: landed %+v, want it stored now", got)
	}
	if got := in.landed(msgOf("other-id", []byte(`{"n":1}`)), "other-id"); got != nil {
		t.Errorf("body held under another id: landed %+v, want nil", got)
	}
	si, err := in.inbox.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.State.Msgs != 2 {
		t.Errorf("stream holds %d messages, want 2", si.State.Msgs)
	}
}
