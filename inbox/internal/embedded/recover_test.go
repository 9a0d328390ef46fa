package embedded

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNeedFree: four of the largest messages, at most a quarter of the
// store's bound and an eighth of the disk, at least 1 MiB.
func TestNeedFree(t *testing.T) {
	dir := t.TempDir()
	_, size := space(dir)
	if size == 0 {
		t.Skip("the size of the disk is unknown here")
	}
	for _, tc := range []struct {
		name                 string
		maxStore, maxMessage int64
		want                 int64
	}{
		{"large messages, no bound", 0, 26 << 20, min(104<<20, size/8)},
		{"a small bound", 64 << 20, 26 << 20, min(16<<20, size/8)},
		{"tiny messages", 0, 1 << 10, 1 << 20},
		{"a tiny bound", 1 << 20, 26 << 20, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recovery{Dir: dir, MaxStore: tc.maxStore, MaxMessage: tc.maxMessage}
			if got := r.NeedFree(); got != max(tc.want, 1<<20) {
				t.Errorf("NeedFree() = %d; want %d (disk %d)", got, max(tc.want, 1<<20), size)
			}
		})
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRecovery: a recovery (started once however often Start is called)
// calls Restart once the disk has room, again after a failed one; Await
// waits for it, then says a retry is worth it for a while.
func TestRecovery(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	var calls atomic.Int32
	closing := make(chan struct{})
	defer close(closing)
	r := &Recovery{Dir: t.TempDir(), MaxMessage: 1 << 10, Closing: closing, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Restart: func() error {
			if calls.Add(1) == 1 {
				return errors.New("not yet")
			}
			return nil
		}}
	if r.Full() {
		t.Skip("the test's disk has less than 1 MiB free")
	}
	ctx := context.Background()
	if r.Await(ctx) {
		t.Error("Await with no recovery ever: true")
	}
	for range 3 {
		r.Start()
	}
	if !r.Recovering() {
		t.Error("Recovering after Start: false")
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !r.Await(wctx) {
		t.Fatalf("Await: false; %d restarts; log:\n%s", calls.Load(), logs.String())
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Restart called %d times; want 2 (one failed)", n)
	}
	if !r.Await(ctx) {
		t.Error("Await just after a restart: false")
	}
	for _, want := range []string{"the disk is full", "not yet", "restarted"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
}

// TestRecoveryClosing: Await returns false once Closing is closed, and
// Start does nothing after it.
func TestRecoveryClosing(t *testing.T) {
	t.Parallel()
	closing := make(chan struct{})
	r := &Recovery{Dir: t.TempDir(), MaxMessage: 1 << 10, Closing: closing, Log: slog.New(slog.DiscardHandler),
		Restart: func() error { return errors.New("never") }}
	r.Start()
	done := make(chan bool)
	go func() { done <- r.Await(context.Background()) }()
	close(closing)
	select {
	case ok := <-done:
		if ok {
			t.Error("Await after Closing: true")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await goes on 10 s after Closing")
	}
	waitNotRecovering := time.Now().Add(10 * time.Second)
	for r.Recovering() {
		if time.Now().After(waitNotRecovering) {
			t.Fatal("the recovery goes on 10 s after Closing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Start()
	if r.Recovering() {
		t.Error("Start after Closing began a recovery")
	}
}
