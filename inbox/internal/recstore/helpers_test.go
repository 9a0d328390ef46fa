package recstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testStore is an embedded JetStream server in dir, as the inbox runs one,
// and the records of one stream in it.
type testStore struct {
	dir string
	ns  *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	r   *Indexed
}

const testStream = "T_SEEN"

func testConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              testStream,
		Subjects:          []string{"t.rec.seen"},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            time.Hour,
		Storage:           jetstream.FileStorage,
		AllowDirect:       true,
		MaxMsgsPerSubject: math.MaxInt64,
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startStore starts the server in dir and opens the records; Close at the
// test's end.
func startStore(t testing.TB, dir string) *testStore {
	t.Helper()
	s := &testStore{dir: dir}
	ns, err := server.NewServer(&server.Options{
		ServerName: "recstore-test", JetStream: true, StoreDir: dir,
		DontListen: true, NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("embedded server did not start")
	}
	s.ns = ns
	if s.nc, err = nats.Connect("", nats.InProcessServer(ns)); err != nil {
		t.Fatal(err)
	}
	if s.js, err = jetstream.New(s.nc, jetstream.WithPublishAsyncTimeout(AsyncAckWait)); err != nil {
		t.Fatal(err)
	}
	if s.r, err = OpenIndexed(context.Background(), s.js, testConfig(), s.file(), false, quietLog()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

func (s *testStore) file() string { return filepath.Join(s.dir, testStream+".index") }

// close closes the records (writing the index), the connection and the
// server; a second call does nothing.
func (s *testStore) close() {
	if s.ns == nil {
		return
	}
	if s.r != nil {
		s.r.Close()
	}
	s.nc.Close()
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.ns = nil
}

// kill stops the server without closing the records: no index written, as
// after a crash.
func (s *testStore) kill() {
	s.r = nil
	s.close()
}

func wantValue(t *testing.T, r Records, key, want string) {
	t.Helper()
	got, err := r.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("get %q = %q, want %q", key, got, want)
	}
	if ok, err := r.Has(context.Background(), key); err != nil || !ok {
		t.Fatalf("has %q = %v, %v", key, ok, err)
	}
}

func wantNone(t *testing.T, r Records, key string) {
	t.Helper()
	if v, err := r.Get(context.Background(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get %q = %q, %v; want ErrKeyNotFound", key, v, err)
	}
}
