package embedded

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// start starts a Server with JetStream in a directory of the test, and a
// connection to it that reconnects, both closed at the test's end.
func start(t testing.TB) (*Server, jetstream.JetStream) {
	t.Helper()
	s, err := Start(server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoSigs: true, NoLog: true}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect("", nats.InProcessServer(s), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return s, js
}

// TestRestart: after Restart the connection comes back by itself to the
// new server, which holds what the old one stored, and the handles made
// before it still work.
func TestRestart(t *testing.T) {
	t.Parallel()
	s, js := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("before")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		if !s.JetStreamEnabled() {
			t.Fatal("JetStream not enabled after Restart")
		}
	}
	// The first requests may meet the connection still reconnecting.
	var ack *jetstream.PubAck
	for ack == nil {
		if ack, err = js.Publish(ctx, "s.2", []byte("after")); err != nil && ctx.Err() != nil {
			t.Fatalf("publishing after the restart: %v", err)
		}
	}
	if ack.Sequence != 2 {
		t.Errorf("stored after the restart at %d; want 2", ack.Sequence)
	}
	if m, err := st.GetMsg(ctx, 1); err != nil || string(m.Data) != "before" {
		t.Errorf("the message stored before the restart: %v", err)
	}
}

// TestAttempt: an Attempt's context ends, with cause ErrStopped, when its
// server restarts or shuts down, not before; one made after a restart is
// bound to the new server.
func TestAttempt(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	for _, tc := range []struct {
		name string
		stop func() error
	}{
		{"restart", s.Restart},
		{"shutdown", func() error { s.Shutdown(); return nil }},
	} {
		ctx, cancel := s.Attempt(context.Background())
		if ctx.Err() != nil {
			t.Fatalf("%s: the attempt ended before its server stopped", tc.name)
		}
		if err := tc.stop(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the attempt goes on 10 s after its server stopped", tc.name)
		}
		if !Stopped(ctx) {
			t.Errorf("%s: Stopped = false; cause %v", tc.name, context.Cause(ctx))
		}
		cancel()
	}
	if err := s.Restart(); err == nil {
		t.Error("Restart after Shutdown: no error")
	}
	if _, err := s.InProcessConn(); err == nil {
		t.Error("InProcessConn after Shutdown: no error")
	}
}

// TestAttemptCancelled: an Attempt cancelled by its caller, or whose
// parent ends, is not Stopped.
func TestAttemptCancelled(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := s.Attempt(parent)
	cancelParent()
	<-ctx.Done()
	if Stopped(ctx) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("parent cancelled: Stopped %v, err %v", Stopped(ctx), ctx.Err())
	}
	cancel()
	ctx, cancel = s.Attempt(context.Background())
	cancel()
	if Stopped(ctx) {
		t.Error("cancelled by its caller: Stopped")
	}
}

// TestAttemptAfterLifeEnded: under a server whose JetStream stopped itself
// (its life ended, no Restart yet), an Attempt is Stopped at once; the
// attempts finished before leave nothing behind in the life they were made
// under.
func TestAttemptAfterLifeEnded(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	l := s.cur.Load()
	for range 3 {
		_, cancel := s.Attempt(context.Background())
		cancel()
	}
	l.mu.Lock()
	left := len(l.attempts)
	l.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d finished attempts still registered", left)
	}
	running, cancelRunning := s.Attempt(context.Background())
	defer cancelRunning()
	l.end() // what the watcher does when JetStream stops itself
	if !Stopped(running) {
		t.Errorf("an attempt under way when the life ended: cause %v", context.Cause(running))
	}
	ctx, cancel := s.Attempt(context.Background())
	defer cancel()
	if !Stopped(ctx) {
		t.Errorf("an attempt made after the life ended: cause %v", context.Cause(ctx))
	}
}

// BenchmarkAttempt is an attempt made and finished under a running server,
// the success path of every store request of the embedded inbox.
func BenchmarkAttempt(b *testing.B) {
	s, _ := start(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		actx, done := s.Attempt(ctx)
		select {
		case <-actx.Done(): // asked for, as a request's wait does
			b.Fatal("the attempt ended under a running server")
		default:
		}
		done()
	}
}
