package recstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startJetStream starts a JetStream server listening on 127.0.0.1, as a
// cluster's node is to the inbox (the records in buckets); shut down at the
// test's end.
func startJetStream(t *testing.T) *server.Server { return startJetStreamMax(t, 0) }

// startJetStreamMax is startJetStream with a store of maxStore bytes (0:
// the server's default).
func startJetStreamMax(t *testing.T, maxStore int64) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		ServerName: "leader-test", JetStream: true, StoreDir: t.TempDir(), JetStreamMaxStore: maxStore,
		Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("server did not start")
	}
	return ns
}

// connect opens a connection of its own to ns, as a process of its own
// would; closed at the test's end.
func connect(t *testing.T, ns *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func setAllowDirect(t *testing.T, js jetstream.JetStream, stream string, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.AllowDirect = on
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderReadsAnyAllowDirect: a bucket opened while its stream allowed
// direct gets reads its keys, missing, written, deleted, by revision, after
// another process turned direct gets off and on again. nats.go's own bucket,
// opened the same way, is answered "no responders" once they are off: the
// failure LeaderReads prevents.
func TestLeaderReadsAnyAllowDirect(t *testing.T) {
	t.Parallel()
	ns := startJetStream(t)
	nc, js := connect(t, ns)
	_, other := connect(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "T_STATUS", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	kv := LeaderReads(nc, plain)

	setAllowDirect(t, other, "KV_T_STATUS", false)
	if _, err := plain.Get(ctx, "k"); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("nats.go's bucket after direct gets were turned off: %v, want no responders (else this test shows nothing)", err)
	}
	for _, direct := range []bool{false, true, false} {
		setAllowDirect(t, other, "KV_T_STATUS", direct)
		key := fmt.Sprintf("k%v", direct)
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("direct %v, a key never written: %v, want ErrKeyNotFound", direct, err)
		}
		rev, err := kv.Put(ctx, key, []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "other", []byte("x")); err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatalf("direct %v, Get: %v", direct, err)
		}
		if string(e.Value()) != "v1" || e.Revision() != rev || e.Key() != key || e.Bucket() != "T_STATUS" || e.Operation() != jetstream.KeyValuePut || e.Created().IsZero() {
			t.Errorf("direct %v, Get: %q rev %d key %q bucket %q op %v created %v, want v1 rev %d", direct, e.Value(), e.Revision(), e.Key(), e.Bucket(), e.Operation(), e.Created(), rev)
		}
		if e, err := kv.GetRevision(ctx, key, rev); err != nil || string(e.Value()) != "v1" {
			t.Errorf("direct %v, GetRevision(%d): %v, %v, want v1", direct, rev, e, err)
		}
		if err := kv.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("direct %v, a deleted key: %v, want ErrKeyNotFound", direct, err)
		}
		if _, err := kv.GetRevision(ctx, "other", rev); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("direct %v, another key's revision: %v, want ErrKeyNotFound", direct, err)
		}
		if _, err := kv.GetRevision(ctx, key, rev+1000); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("direct %v, a revision past the last: %v, want ErrKeyNotFound", direct, err)
		}
	}
	for _, key := range []string{"", "a.*", "a.>", ".a", "a.", "a..b", "a b"} {
		if _, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrInvalidKey) {
			t.Errorf("Get(%q): %v, want ErrInvalidKey", key, err)
		}
	}
}

// TestLeaderMsg: a message read by sequence and by subject, and the errors
// of one missing and of a stream missing.
func TestLeaderMsg(t *testing.T) {
	t.Parallel()
	ns := startJetStream(t)
	nc, js := connect(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("s.a")
	m.Header.Set("H", "h1")
	m.Data = []byte("one")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.b", []byte("two")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		get       func() (*jetstream.RawStreamMsg, error)
		seq       uint64
		data, hdr string
		err       error
	}{
		{"by sequence", func() (*jetstream.RawStreamMsg, error) { return LeaderMsg(ctx, nc, "S", 1) }, 1, "one", "h1", nil},
		{"last on a subject", func() (*jetstream.RawStreamMsg, error) { return LeaderLastMsg(ctx, nc, "S", "s.b") }, 2, "two", "", nil},
		{"no such sequence", func() (*jetstream.RawStreamMsg, error) { return LeaderMsg(ctx, nc, "S", 9) }, 0, "", "", jetstream.ErrMsgNotFound},
		{"nothing on the subject", func() (*jetstream.RawStreamMsg, error) { return LeaderLastMsg(ctx, nc, "S", "s.c") }, 0, "", "", jetstream.ErrMsgNotFound},
		{"no such stream", func() (*jetstream.RawStreamMsg, error) { return LeaderMsg(ctx, nc, "NONE", 1) }, 0, "", "", jetstream.ErrStreamNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("%v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Sequence != tc.seq || string(got.Data) != tc.data || got.Header.Get("H") != tc.hdr || got.Time.IsZero() {
				t.Errorf("seq %d data %q header %q time %v, want %d %q %q", got.Sequence, got.Data, got.Header.Get("H"), got.Time, tc.seq, tc.data, tc.hdr)
			}
		})
	}
}

// TestSetupConcurrentOpeners: two processes that open an inbox's records at
// the same moment (a `work` starting while `inbox ls` runs) both start, and
// both read the statuses, missing and written by the other. When each
// opener turned the status bucket's direct gets on and then off, one that
// opened the bucket in between sent direct gets that nothing answered ("no
// responders": 8 of 200 openers in a run), and one that created the bucket
// after the other had turned them off was refused ("stream name already in
// use"); this test failed 2 runs of 3 so.
func TestSetupConcurrentOpeners(t *testing.T) {
	t.Parallel()
	ns := startJetStream(t)
	const rounds = 50
	for i := range rounds {
		name := fmt.Sprintf("T%d", i)
		var status [2]Records
		var errs [2]error
		var wg sync.WaitGroup
		for p := range status {
			_, js := connect(t, ns)
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				status[p], _, errs[p] = Setup(ctx, js, SetupOptions{Name: name, Replicas: 1, StatusTTL: time.Hour, SeenTTL: time.Minute, Logger: quietLog()})
			})
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for p, r := range status {
			if _, err := r.Get(ctx, "missing"); !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Errorf("round %d, opener %d, a status never written: %v, want ErrKeyNotFound", i, p, err)
			}
			key := fmt.Sprintf("k%d", p)
			if err := r.Put(ctx, key, []byte(key)); err != nil {
				t.Fatalf("round %d, opener %d: %v", i, p, err)
			}
			if v, err := status[1-p].Get(ctx, key); err != nil || string(v) != key {
				t.Errorf("round %d, opener %d reading what %d wrote: %q, %v", i, 1-p, p, v, err)
			}
		}
		cancel()
	}
}
