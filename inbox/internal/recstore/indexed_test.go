package recstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

func TestIndexedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startStore(t, dir)
	r := s.r
	wantNone(t, r, "i_missing")
	if err := r.Put(ctx, "i_a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, "i_a", []byte("two")); err != nil {
		t.Fatal(err)
	}
	r.PutAsync([]byte("async"), "b_c", "i_c")
	// Read at once, before the batch is written: the process sees its
	// own writes.
	wantValue(t, r, "i_c", "async")
	// A put waited for after one not waited for, of the same key, wins.
	r.PutAsync([]byte("older"), "i_order")
	if err := r.Put(ctx, "i_order", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r, "i_order", "newer")
	if err := r.PutWait(ctx, []byte("waited"), "i_w", "b_w"); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r, "i_a", "two")
	wantValue(t, r, "b_c", "async")
	wantValue(t, r, "i_c", "async")
	wantValue(t, r, "b_w", "waited")
	for _, bad := range []string{"", "bad\nkey", "two keys"} {
		if err := r.Put(ctx, bad, nil); err == nil {
			t.Fatalf("key %q was taken", bad)
		}
		if err := r.PutWait(ctx, nil, "ok", bad); err == nil {
			t.Fatalf("PutWait: key %q was taken", bad)
		}
	}

	// A key whose hash finds another key's record reads as absent.
	r.mu.Lock()
	r.idx.set(keyHash("i_other"), r.idx.get(keyHash("i_a")))
	r.mu.Unlock()
	wantNone(t, r, "i_other")

	// A record whose sequence the index never got (an answer lost, the
	// queue of answers full) is read from the stream by catchUp.
	if _, err := s.js.Publish(ctx, r.subject, recordData(&recordEntry{keys: []string{"i_lost"}, value: []byte("found")})); err != nil {
		t.Fatal(err)
	}
	wantNone(t, r, "i_lost")
	r.markRescan()
	if err := r.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r, "i_lost", "found")

	// Close writes the index; the next Open reads it, not the stream.
	s.close()
	s = startStore(t, dir)
	r = s.r
	if _, err := os.Stat(r.file); err != nil {
		t.Fatalf("no index file after Close: %v", err)
	}
	wantValue(t, r, "i_a", "two")
	wantValue(t, r, "b_c", "async")
	wantValue(t, r, "i_lost", "found")
	wantValue(t, r, "i_order", "newer")
	wantValue(t, r, "i_w", "waited")
}

// TestPutWaitOutlivesAKill: a value PutWait returned for is read after the
// server is stopped with no Close (no index written), from the stream.
func TestPutWaitOutlivesAKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startStore(t, dir)
	const n = 2000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := s.r.PutWait(ctx, fmt.Appendf(nil, "v%d", i), fmt.Sprintf("i_%d", i), fmt.Sprintf("b_%d", i)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.kill()
	s = startStore(t, dir)
	for i := range n {
		wantValue(t, s.r, fmt.Sprintf("i_%d", i), fmt.Sprintf("v%d", i))
		wantValue(t, s.r, fmt.Sprintf("b_%d", i), fmt.Sprintf("v%d", i))
	}
}

// TestPutWaitEach: values of their own written together are one record of
// the stream, each read back under its key, after a kill too; a bad key
// refuses the whole write.
func TestPutWaitEach(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startStore(t, dir)
	before, err := s.r.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.r.PutWaitEach(ctx, Entry{Key: "s_handled", Value: []byte("handled")}, Entry{Key: "s_next", Value: []byte("running")}); err != nil {
		t.Fatal(err)
	}
	after, err := s.r.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.State.Msgs - before.State.Msgs; n != 1 {
		t.Errorf("%d records for two entries written together, want 1", n)
	}
	wantValue(t, s.r, "s_handled", "handled")
	wantValue(t, s.r, "s_next", "running")
	if err := s.r.PutWaitEach(ctx, Entry{Key: "s_ok", Value: []byte("x")}, Entry{Key: "s bad", Value: []byte("y")}); err == nil {
		t.Error("a key with a space was taken")
	}
	wantNone(t, s.r, "s_ok")
	s.kill()
	s = startStore(t, dir)
	wantValue(t, s.r, "s_handled", "handled")
	wantValue(t, s.r, "s_next", "running")
}

// TestIndexAfterCrash: records written after the last snapshot (a process
// killed before it wrote the next) are read from the stream at Open.
func TestIndexAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startStore(t, dir)
	if err := s.r.Put(ctx, "i_before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	s.close()
	s = startStore(t, dir)
	old, err := os.ReadFile(s.file())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		s.r.PutAsync([]byte("2"), fmt.Sprintf("i_after%d", i), fmt.Sprintf("b_after%d", i))
	}
	if err := s.r.Put(ctx, "i_before", []byte("3")); err != nil {
		t.Fatal(err)
	}
	s.close()
	// As if the process had died before this Close wrote the index.
	if err := os.WriteFile(s.file(), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s = startStore(t, dir)
	wantValue(t, s.r, "i_before", "3")
	for i := range 100 {
		wantValue(t, s.r, fmt.Sprintf("i_after%d", i), "2")
		wantValue(t, s.r, fmt.Sprintf("b_after%d", i), "2")
	}
}

// TestIndexFileNotUsed: an index file that is damaged, or that was written
// for a stream since deleted, is not trusted: the index is read from the
// stream.
func TestIndexFileNotUsed(t *testing.T) {
	ctx := context.Background()
	t.Run("damaged", func(t *testing.T) {
		dir := t.TempDir()
		s := startStore(t, dir)
		if err := s.r.Put(ctx, "i_x", []byte("kept")); err != nil {
			t.Fatal(err)
		}
		s.close()
		b, err := os.ReadFile(s.file())
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-8] ^= 0xff // an entry's sequence
		if err := os.WriteFile(s.file(), b, 0o600); err != nil {
			t.Fatal(err)
		}
		s = startStore(t, dir)
		wantValue(t, s.r, "i_x", "kept")
	})
	t.Run("another stream", func(t *testing.T) {
		dir := t.TempDir()
		s := startStore(t, dir)
		if err := s.r.Put(ctx, "i_gone", []byte("old")); err != nil {
			t.Fatal(err)
		}
		s.close()
		s = startStore(t, dir)
		if err := s.js.DeleteStream(ctx, testStream); err != nil {
			t.Fatal(err)
		}
		s.kill()
		s = startStore(t, dir)
		wantNone(t, s.r, "i_gone")
	})
}

// TestIndexWrittenAfterReadingTail: an Open that read many records written
// after the last snapshot (a kill cut the Close that would have written it)
// writes the index at once, while open: another kill then leaves the next
// start only what came after, not the tails of every run killed before.
func TestIndexWrittenAfterReadingTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startStore(t, dir)
	if err := s.r.Put(ctx, "i_before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	s.close()
	old, err := os.ReadFile(s.file())
	if err != nil {
		t.Fatal(err)
	}
	s = startStore(t, dir)
	for i := range loadSnapshotEntries {
		s.r.PutAsync([]byte("2"), fmt.Sprintf("i_after%d", i))
	}
	s.close()
	// As if the process had died before this Close wrote the index.
	if err := os.WriteFile(s.file(), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s = startStore(t, dir)
	// Sooner than the periodic write (snapshotEvery).
	deadline := time.Now().Add(snapshotEvery / 2)
	for {
		b, err := os.ReadFile(s.file())
		if err == nil && !bytes.Equal(b, old) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index was not written after an Open read the records after it")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Killed now: the index written while open serves the next start.
	b, _ := os.ReadFile(s.file())
	s.close()
	if err := os.WriteFile(s.file(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = startStore(t, dir)
	s.r.mu.Lock()
	since := s.r.since
	s.r.mu.Unlock()
	if since != 0 {
		t.Errorf("the start after read %d keys from the stream, want 0", since)
	}
	wantValue(t, s.r, "i_before", "1")
	wantValue(t, s.r, fmt.Sprintf("i_after%d", loadSnapshotEntries-1), "2")
}
