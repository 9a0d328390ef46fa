package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// fakeIntake keeps the records a Runner writes in memory. Its status reads
// fail while failing is set, as they do while a node is shut down or a
// leader elected.
type fakeIntake struct {
	// check, when set, is Check.
	check func(h nats.Header, data []byte) error
	// onPut, when set, sees each PutStatuses call first; its error fails
	// the call, nothing written.
	onPut func(sts []KeyedStatus) error

	failing atomic.Bool
	failed  atomic.Int64 // reads refused while failing
	puts    atomic.Int64

	mu       sync.Mutex
	statuses map[string]stored.Status
	dead     map[string]uint64 // token → the copy buried
	reasons  map[string]string // status key → the dead letter's reason
}

func newFakeIntake() *fakeIntake {
	return &fakeIntake{statuses: map[string]stored.Status{}, dead: map[string]uint64{}, reasons: map[string]string{}}
}

func (f *fakeIntake) ReadStatus(ctx context.Context, key string) (*stored.Status, error) {
	if f.failing.Load() {
		f.failed.Add(1)
		return nil, context.DeadlineExceeded
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[key]
	if !ok {
		return nil, nil
	}
	st.Attempts = append([]delivery.Attempt(nil), st.Attempts...)
	return &st, nil
}

// PutStatuses counts a record per call, as the embedded store writes one.
func (f *fakeIntake) PutStatuses(_ context.Context, sts ...KeyedStatus) error {
	f.puts.Add(1)
	if f.onPut != nil {
		if err := f.onPut(sts); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range sts {
		cp := *s.Status
		cp.Attempts = append([]delivery.Attempt(nil), s.Status.Attempts...)
		f.statuses[s.Key] = cp
	}
	return nil
}

func (f *fakeIntake) putStatus(ctx context.Context, key string, st *stored.Status) error {
	return f.PutStatuses(ctx, KeyedStatus{Key: key, Status: st})
}

func (f *fakeIntake) Bury(ctx context.Context, _ []byte, _ nats.Header, token, key string, st *stored.Status, reason string) error {
	st.Status = delivery.StatusDead
	f.mu.Lock()
	f.dead[token] = st.Seq
	f.reasons[key] = reason
	f.mu.Unlock()
	return f.putStatus(ctx, key, st)
}

func (f *fakeIntake) IsDead(_ context.Context, token string, seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.dead[token]
	return ok && s == seq
}

func (f *fakeIntake) RememberStored(context.Context, uint64) error { return nil }

func (f *fakeIntake) Changed(nats.Header, []byte, uint64, *stored.Status) {}

func (f *fakeIntake) Check(h nats.Header, data []byte) (Checked, error) {
	if f.check != nil {
		return Checked{}, f.check(h, data)
	}
	return Checked{}, nil
}

// status returns the status of the delivery with id.
func (f *fakeIntake) status(id string) (stored.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[stored.SubjectToken(id)]
	return st, ok
}

// reason returns the reason of the dead letter of the delivery with id.
func (f *fakeIntake) reason(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reasons[stored.SubjectToken(id)]
}

const testName = "T"

// harness is a Runner on an embedded server of its own, with a fakeIntake.
type harness struct {
	t      *testing.T
	js     jetstream.JetStream
	inbox  jetstream.Stream
	keys   jetstream.KeyValue
	intake *fakeIntake
	r      *Runner

	mu   sync.Mutex
	seen map[string][]webhooks.Delivery // the deliveries Handle was given, by id
}

// newHarness starts a server and the streams an inbox would create, and a
// Runner on them whose handlers call handle (nil: succeed). edit, when set,
// changes the Config before the Runner starts; the Runner is not started
// when start is false.
func newHarness(t *testing.T, handle func(webhooks.Delivery) error, edit func(*Config), start bool) *harness {
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
	h := &harness{t: t, js: js, intake: newFakeIntake(), seen: map[string][]webhooks.Delivery{}}
	if h.inbox, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: testName + "_INBOX", Subjects: []string{testName + ".in.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	keys, parked, err := Setup(ctx, js, testName, 1, time.Hour, false, false)
	if err != nil {
		t.Fatal(err)
	}
	h.keys = keys
	cfg := Config{
		Name: testName, Embedded: true, Workers: 4, RetryDelays: []time.Duration{20 * time.Millisecond}, AckWait: 10 * time.Second,
		OrderPartitions: 2,
		Handle: func(_ context.Context, d webhooks.Delivery) error {
			h.mu.Lock()
			h.seen[d.ID] = append(h.seen[d.ID], d)
			h.mu.Unlock()
			if handle == nil {
				return nil
			}
			return handle(d)
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Conn:   nc, JS: js, Inbox: h.inbox, Parked: parked, Keys: h.keys, Intake: h.intake,
	}
	if edit != nil {
		edit(&cfg)
	}
	h.r = New(cfg)
	t.Cleanup(func() {
		h.r.StopTaking()
		h.r.Stop()
		h.r.Wait()
	})
	if start {
		if err := h.r.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// byRepo orders the deliveries by their id's first letter.
func byRepo(d webhooks.Delivery) string { return "key:" + d.ID[:1] }

// store publishes a delivery as the inbox stores it; with key, in its
// partition (of 2). It returns its sequence.
func (h *harness) store(id, key string) uint64 {
	h.t.Helper()
	data := []byte(`{"action":"opened"}`)
	m := &nats.Msg{Subject: testName + ".in." + stored.StoreToken, Data: data, Header: nats.Header{}}
	m.Header.Set(stored.HeaderVersion, stored.Version)
	m.Header.Set(stored.HeaderEvent, "issues")
	m.Header.Set(stored.HeaderDelivery, id)
	m.Header.Set(stored.HeaderSize, strconv.Itoa(len(data)))
	m.Header.Set(stored.HeaderReceivedAt, time.Now().UTC().Format(time.RFC3339Nano))
	m.Header.Set("X-Test", "kept")
	if key != "" {
		p := stored.PartitionToken(len(key) % 2)
		m.Header.Set(stored.HeaderPartition, p)
		m.Header.Set(stored.HeaderOrderKey, key)
		m.Subject = testName + ".in." + p + "." + stored.StoreToken
	}
	ack, err := h.js.PublishMsg(context.Background(), m)
	if err != nil {
		h.t.Fatal(err)
	}
	return ack.Sequence
}

// ran returns the deliveries Handle was given for id.
func (h *harness) ran(id string) []webhooks.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhooks.Delivery(nil), h.seen[id]...)
}

// waitStatus waits for the status of id to be want.
func (h *harness) waitStatus(id string, want delivery.Status) stored.Status {
	h.t.Helper()
	var st stored.Status
	waitFor(h.t, 30*time.Second, id+" "+string(want), func() bool {
		var ok bool
		st, ok = h.intake.status(id)
		return ok && st.Status == want
	})
	return st
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errFail = errors.New("the handler failed")
