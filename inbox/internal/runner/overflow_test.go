package runner

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/overflow"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// storeOn publishes a delivery of tenant on subject, as the intake stores
// it there.
func (h *harness) storeOn(subject, tenant, id string) uint64 {
	h.t.Helper()
	data := []byte(`{"action":"opened"}`)
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	m.Header.Set(stored.HeaderVersion, stored.Version)
	m.Header.Set(stored.HeaderEvent, "issues")
	m.Header.Set(stored.HeaderDelivery, id)
	m.Header.Set(stored.HeaderTenant, tenant)
	m.Header.Set(stored.HeaderSize, strconv.Itoa(len(data)))
	m.Header.Set(stored.HeaderReceivedAt, time.Now().UTC().Format(time.RFC3339Nano))
	ack, err := h.js.PublishMsg(context.Background(), m)
	if err != nil {
		h.t.Fatal(err)
	}
	return ack.Sequence
}

// consumers lists the names of the stream's consumers.
func (h *harness) consumers() []string {
	var out []string
	names := h.inbox.ConsumerNames(context.Background())
	for n := range names.Name() {
		out = append(out, n)
	}
	return out
}

// TestOverflowConsumers: the deliveries stored on a tenant's own subject
// run once, through the consumer the intake made; once idle, the consumer
// is deleted; a delivery stored on the subject afterwards (as by an intake
// that made sure of the consumer just before it went) is found by the
// reconcile pass, whose consumer hands out the subject from its start:
// the deliveries that ran before are settled from their statuses, not run
// again, and the new one runs once.
func TestOverflowConsumers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, nil, false)
	h.r.idleAfter = 300 * time.Millisecond
	ctx := context.Background()
	if err := h.r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	digest := stored.TenantDigest("x")
	subject := overflow.Subject(testName, digest)
	name := overflow.ConsumerName(testName, digest)
	if err := overflow.Ensure(ctx, h.inbox, overflow.ConsumerConfig(testName, digest, 10*time.Second, 1)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.storeOn(subject, "x", "x"+strconv.Itoa(i))
	}
	h.store("shared", "") // the workers' consumer still runs the shared subject
	// A tenant's delivery's status key is of tenant/id (stored.DeliveryKey).
	for _, id := range []string{"x/x0", "x/x1", "x/x2", "shared"} {
		h.waitStatus(id, delivery.StatusHandled)
	}
	waitFor(t, 30*time.Second, "the idle consumer deleted", func() bool { return !slices.Contains(h.consumers(), name) })
	seq := h.storeOn(subject, "x", "x3")
	st := h.waitStatus("x/x3", delivery.StatusHandled)
	if st.Seq != seq {
		t.Errorf("x3's status names copy %d, want %d", st.Seq, seq)
	}
	if !slices.Contains(h.consumers(), name) {
		t.Error("x3 ran without its subject's consumer")
	}
	// The ones before were handed out again by the consumer made again:
	// wait until it has settled them (nothing pending) before counting.
	waitFor(t, 30*time.Second, "the consumer made again settles its subject", func() bool {
		c, err := h.inbox.Consumer(ctx, name)
		if err != nil {
			return false
		}
		info := c.CachedInfo()
		return info.NumPending == 0 && info.NumAckPending == 0
	})
	for _, id := range []string{"x0", "x1", "x2", "x3", "shared"} {
		if n := len(h.ran(id)); n != 1 {
			t.Errorf("%s ran %d times, want once", id, n)
		}
	}
}
