package recstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// updates counts the streams' update advisories the server publishes.
type updates struct {
	mu   sync.Mutex
	n    map[string]int
	mark chan struct{}
}

// updatedPrefix starts the subjects of the advisories; mark is no stream's
// name.
const (
	updatedPrefix = "$JS.EVENT.ADVISORY.STREAM.UPDATED."
	mark          = "-mark-"
)

func watchUpdates(t *testing.T, nc *nats.Conn) *updates {
	t.Helper()
	u := &updates{n: map[string]int{}, mark: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(updatedPrefix+">", func(m *nats.Msg) {
		name := m.Subject[len(updatedPrefix):]
		if name == mark {
			u.mark <- struct{}{}
			return
		}
		u.mu.Lock()
		u.n[name]++
		u.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return u
}

// take returns the updates counted since the last call. The server sends
// an update's advisory before its answer, so a mark published on the same
// subjects after the answer comes after the advisory.
func (u *updates) take(t *testing.T, nc *nats.Conn) map[string]int {
	t.Helper()
	if err := nc.Publish(updatedPrefix+mark, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-u.mark:
	case <-time.After(30 * time.Second):
		t.Fatal("the mark did not come back")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	n := u.n
	u.n = map[string]int{}
	return n
}

// TestCreateOrUpdateSendsNoUpdateUnchanged: opening streams and buckets
// that have the configuration asked for sends no update (nats-server races
// an update against a consumer's creation); another configuration is
// applied, and so is direct gets turned back on where an earlier version
// turned them off.
func TestCreateOrUpdateSendsNoUpdateUnchanged(t *testing.T) {
	t.Parallel()
	ns := startJetStream(t)
	nc, js := connect(t, ns)
	u := watchUpdates(t, nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scfg := jetstream.StreamConfig{Name: "S", Description: "one", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage, AllowDirect: true, MaxAge: time.Hour}
	kcfg := jetstream.KeyValueConfig{Bucket: "B", Description: "one", Storage: jetstream.FileStorage, TTL: time.Hour}
	open := func() {
		t.Helper()
		if _, err := CreateOrUpdateStream(ctx, js, scfg, false); err != nil {
			t.Fatal(err)
		}
		if _, err := CreateOrUpdateKeyValue(ctx, js, kcfg, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name   string
		change func()
		want   map[string]int
	}{
		{"created", func() {}, map[string]int{}},
		{"opened again", func() {}, map[string]int{}},
		{"another configuration", func() { scfg.Description, kcfg.Description = "two", "two" }, map[string]int{"S": 1, "KV_B": 1}},
		{"opened again after", func() {}, map[string]int{}},
		{"direct gets off", func() { setAllowDirect(t, js, "KV_B", false); u.take(t, nc) }, map[string]int{"KV_B": 1}},
	} {
		step.change()
		open()
		got := u.take(t, nc)
		if len(got) != len(step.want) {
			t.Errorf("%s: updates %v, want %v", step.name, got, step.want)
			continue
		}
		for k, n := range step.want {
			if got[k] != n {
				t.Errorf("%s: updates %v, want %v", step.name, got, step.want)
			}
		}
	}
	st, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if d := st.CachedInfo().Config.Description; d != "two" {
		t.Errorf("stream's description %q, want two", d)
	}
	b, err := js.Stream(ctx, "KV_B")
	if err != nil {
		t.Fatal(err)
	}
	if c := b.CachedInfo().Config; c.Description != "two" || !c.AllowDirect {
		t.Errorf("bucket's description %q, direct gets %v; want two, on", c.Description, c.AllowDirect)
	}
}

// TestCreateOrUpdateStreamReservedBytes: a stream whose bytes the server
// reserves, more than half its store, is opened again and changed: the
// server refuses the create for its limits (it counts the reservation
// twice), and the update goes through, as in the embedded mode.
func TestCreateOrUpdateStreamReservedBytes(t *testing.T) {
	t.Parallel()
	_, js := connect(t, startJetStreamMax(t, 64<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: jetstream.FileStorage, MaxBytes: 48 << 20}
	for _, desc := range []string{"one", "one", "two"} {
		cfg.Description = desc
		st, err := CreateOrUpdateStream(ctx, js, cfg, false)
		if err != nil {
			t.Fatalf("opening with description %q: %v", desc, err)
		}
		if d := st.CachedInfo().Config.Description; d != desc {
			t.Errorf("description %q, want %q", d, desc)
		}
	}
}
