package overflow

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

const testName = "T"

// newStream starts an embedded server with an inbox stream and the
// workers' consumer on its shared subject.
func newStream(t *testing.T) (jetstream.JetStream, jetstream.Stream, jetstream.Consumer) {
	t.Helper()
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the embedded server did not start")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: testName + "_INBOX", Subjects: []string{testName + ".in.>"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: testName + "_WORKERS", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubjects: []string{testName + ".in.*", testName + ".in.*.*"}})
	if err != nil {
		t.Fatal(err)
	}
	return js, s, c
}

// TestRouter: a tenant stays on the shared subject until Threshold of its
// deliveries wait there, then goes to its own subject (its consumer made
// first) while another tenant stays; once the workers' consumer has handed
// out the waiting ones and its own subject has run dry, it is back on the
// shared subject.
func TestRouter(t *testing.T) {
	t.Parallel()
	js, s, workers := newStream(t)
	ctx := context.Background()
	r := &Router{Name: testName, Workers: testName + "_WORKERS", AckWait: 10 * time.Second}
	shared := testName + ".in." + stored.StoreToken
	own := Subject(testName, stored.TenantDigest("flood"))
	publish := func(tenant string) string {
		t.Helper()
		subj := r.Subject(ctx, s, tenant)
		pa, err := js.Publish(ctx, subj, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		r.Stored(tenant, subj, pa.Sequence)
		return subj
	}
	for i := range Threshold {
		if got := publish("flood"); got != shared {
			t.Fatalf("delivery %d of the flood on %s, want the shared subject", i, got)
		}
	}
	if got := publish("flood"); got != own {
		t.Fatalf("with %d waiting: %s, want the tenant's own %s", Threshold, got, own)
	}
	if _, err := s.Consumer(ctx, ConsumerName(testName, stored.TenantDigest("flood"))); err != nil {
		t.Fatalf("the tenant's consumer: %v", err)
	}
	if got := publish("quiet"); got != shared {
		t.Errorf("another tenant on %s, want the shared subject", got)
	}
	if got := publish(""); got != shared {
		t.Errorf("the deliveries without a tenant on %s, want the shared subject", got)
	}
	// The workers take what waits on the shared subject; the tenant's own
	// consumer takes its one delivery.
	for _, c := range []jetstream.Consumer{workers, mustConsumer(t, s, ConsumerName(testName, stored.TenantDigest("flood")))} {
		batch, err := c.FetchNoWait(100)
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for publish("flood") != shared {
		if time.Now().After(deadline) {
			t.Fatal("the tenant stayed on its own subject after it ran dry")
		}
		time.Sleep(100 * time.Millisecond)
		// Each delivery stored on its own subject meanwhile is taken too.
		batch, _ := mustConsumer(t, s, ConsumerName(testName, stored.TenantDigest("flood"))).FetchNoWait(100)
		for m := range batch.Messages() {
			_ = m.DoubleAck(ctx)
		}
	}
}

// TestRouterCountsPublishesInFlight: deliveries named the shared subject
// and not yet stored count towards Threshold, so that concurrent intakes do
// not all pass it at once; a publish that stored nothing gives its place
// back.
func TestRouterCountsPublishesInFlight(t *testing.T) {
	t.Parallel()
	_, s, _ := newStream(t)
	ctx := context.Background()
	r := &Router{Name: testName, Workers: testName + "_WORKERS", AckWait: 10 * time.Second}
	shared := testName + ".in." + stored.StoreToken
	own := Subject(testName, stored.TenantDigest("flood"))
	for i := range Threshold {
		if got := r.Subject(ctx, s, "flood"); got != shared {
			t.Fatalf("publish %d in flight on %s, want the shared subject", i, got)
		}
	}
	if got := r.Subject(ctx, s, "flood"); got != own {
		t.Fatalf("with %d publishes in flight: %s, want the tenant's own %s", Threshold, got, own)
	}
	r2 := &Router{Name: testName, Workers: testName + "_WORKERS", AckWait: 10 * time.Second}
	for range 3 * Threshold {
		subj := r2.Subject(ctx, s, "failing")
		if subj != shared {
			t.Fatalf("a tenant whose publishes all fail on %s, want the shared subject", subj)
		}
		r2.Stored("failing", subj, 0)
	}
	r2.mu.Lock()
	defer r2.mu.Unlock()
	if len(r2.tenants) != 0 {
		t.Errorf("the Router keeps %d tenants with nothing stored", len(r2.tenants))
	}
}

// TestRouterCreatesOnce: concurrent intakes that find a tenant's consumer
// due to be made send one request between them; those that come while it
// is on its way wait for it (the consumer may not exist yet), and all name
// the tenant's own subject: none of the tenant's backlog goes on the shared
// one, ahead of other tenants' deliveries.
func TestRouterCreatesOnce(t *testing.T) {
	t.Parallel()
	js, s, _ := newStream(t)
	ctx := context.Background()
	var creates atomic.Int64
	sub, err := js.Conn().Subscribe("$JS.API.CONSUMER.CREATE.>", func(*nats.Msg) { creates.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	r := &Router{Name: testName, Workers: testName + "_WORKERS", AckWait: 10 * time.Second}
	own := Subject(testName, stored.TenantDigest("flood"))
	for range Threshold {
		r.Subject(ctx, s, "flood") // in flight on the shared subject
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if got := r.Subject(ctx, s, "flood"); got != own {
				t.Errorf("a concurrent call named %s, want the tenant's own %s", got, own)
			}
		})
	}
	wg.Wait()
	if got := r.Subject(ctx, s, "flood"); got != own {
		t.Errorf("after the consumer was made: %s, want the tenant's own %s", got, own)
	}
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d requests to create the tenant's consumer, want 1", n)
	}
}

func mustConsumer(t *testing.T, s jetstream.Stream, name string) jetstream.Consumer {
	t.Helper()
	c, err := s.Consumer(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDigestOf: the names of the tenants' consumers, and no other, give
// their digest back.
func TestDigestOf(t *testing.T) {
	d := stored.TenantDigest("acme")
	for _, tc := range []struct {
		consumer string
		want     string
		ok       bool
	}{
		{ConsumerName("T", d), d, true},
		{ConsumerName("T", stored.TenantDigest("")), stored.TenantDigest(""), true},
		{"T_WORKERS", "", false},
		{"T_ORDER_p0", "", false},
		{ConsumerName("U", d), "", false},
		{"T_T_" + d[:15], "", false},
		{"T_T_" + d + "0", "", false},
		{"T_T_" + d[:15] + "G", "", false},
	} {
		got, ok := DigestOf("T", tc.consumer)
		if got != tc.want || ok != tc.ok {
			t.Errorf("DigestOf(%q) = %q, %v; want %q, %v", tc.consumer, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzDigestOf: a digest it returns names the consumer it was read from.
func FuzzDigestOf(f *testing.F) {
	f.Add(ConsumerName("T", stored.TenantDigest("acme")))
	f.Add("T_WORKERS")
	f.Fuzz(func(t *testing.T, consumer string) {
		if d, ok := DigestOf("T", consumer); ok && ConsumerName("T", d) != consumer {
			t.Errorf("DigestOf(%q) = %q, which names %q", consumer, d, ConsumerName("T", d))
		}
	})
}
