package inbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// indexOf returns the embedded inbox's dedupe records.
func indexOf(t *testing.T, in *Inbox) *indexedRecords {
	t.Helper()
	r, ok := in.seen.(*indexedRecords)
	if !ok {
		t.Fatalf("the embedded inbox keeps its records in %T, not in an indexed stream", in.seen)
	}
	return r
}

// reopen closes in and opens the embedded inbox in dir again.
func reopen(t *testing.T, in *Inbox, dir string) *Inbox {
	t.Helper()
	if err := in.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return openInbox(t, dir, Options{})
}

func wantValue(t *testing.T, r records, key, want string) {
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

func wantNone(t *testing.T, r records, key string) {
	t.Helper()
	if v, err := r.Get(context.Background(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get %q = %q, %v; want ErrKeyNotFound", key, v, err)
	}
}

func TestIndexedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := openInbox(t, dir, Options{})
	r := indexOf(t, in)
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
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r, "i_a", "two")
	wantValue(t, r, "b_c", "async")
	wantValue(t, r, "i_c", "async")
	for _, bad := range []string{"", "bad\nkey", "two keys"} {
		if err := r.Put(ctx, bad, nil); err == nil {
			t.Fatalf("key %q was taken", bad)
		}
	}

	// A key whose hash finds another key's record reads as absent.
	r.mu.Lock()
	r.idx.set(keyHash("i_other"), r.idx.get(keyHash("i_a")))
	r.mu.Unlock()
	wantNone(t, r, "i_other")

	// A record whose sequence the index never got (an answer lost, the
	// queue of answers full) is read from the stream by catchUp.
	if _, err := in.js.Publish(ctx, r.subject, recordData(recordEntry{[]string{"i_lost"}, []byte("found")})); err != nil {
		t.Fatal(err)
	}
	wantNone(t, r, "i_lost")
	r.markRescan()
	if err := r.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r, "i_lost", "found")

	// Close writes the index; the next Open reads it, not the stream.
	in = reopen(t, in, dir)
	r = indexOf(t, in)
	if _, err := os.Stat(r.file); err != nil {
		t.Fatalf("no index file after Close: %v", err)
	}
	wantValue(t, r, "i_a", "two")
	wantValue(t, r, "b_c", "async")
	wantValue(t, r, "i_lost", "found")
	wantValue(t, r, "i_order", "newer")
}

// TestIndexAfterCrash: records written after the last snapshot (a process
// killed before it wrote the next) are read from the stream at Open.
func TestIndexAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := openInbox(t, dir, Options{})
	if err := indexOf(t, in).Put(ctx, "i_before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	in = reopen(t, in, dir)
	file := indexOf(t, in).file
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		indexOf(t, in).PutAsync([]byte("2"), fmt.Sprintf("i_after%d", i), fmt.Sprintf("b_after%d", i))
	}
	if err := indexOf(t, in).Put(ctx, "i_before", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// As if the process had died before this Close wrote the index.
	if err := os.WriteFile(file, old, 0o600); err != nil {
		t.Fatal(err)
	}
	in = openInbox(t, dir, Options{})
	r := indexOf(t, in)
	wantValue(t, r, "i_before", "3")
	for i := range 100 {
		wantValue(t, r, fmt.Sprintf("i_after%d", i), "2")
		wantValue(t, r, fmt.Sprintf("b_after%d", i), "2")
	}
}

// TestIndexFileNotUsed: an index file that is damaged, or that was written
// for a stream since deleted, is not trusted: the index is read from the
// stream.
func TestIndexFileNotUsed(t *testing.T) {
	ctx := context.Background()
	t.Run("damaged", func(t *testing.T) {
		dir := t.TempDir()
		in := openInbox(t, dir, Options{})
		if err := indexOf(t, in).Put(ctx, "i_x", []byte("kept")); err != nil {
			t.Fatal(err)
		}
		in = reopen(t, in, dir)
		file := indexOf(t, in).file
		if err := in.Close(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-8] ^= 0xff // an entry's sequence
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		in = openInbox(t, dir, Options{})
		wantValue(t, indexOf(t, in), "i_x", "kept")
	})
	t.Run("another stream", func(t *testing.T) {
		dir := t.TempDir()
		in := openInbox(t, dir, Options{})
		if err := indexOf(t, in).Put(ctx, "i_gone", []byte("old")); err != nil {
			t.Fatal(err)
		}
		in = reopen(t, in, dir)
		name := indexOf(t, in).stream.CachedInfo().Config.Name
		if err := in.js.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
		if err := in.Close(ctx); err != nil {
			t.Fatal(err)
		}
		in = openInbox(t, dir, Options{})
		wantNone(t, indexOf(t, in), "i_gone")
	})
}

// TestImportBucket: the dedupe records an earlier version kept in a
// key-value bucket are moved into the indexed stream at Open.
func TestImportBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := openInbox(t, dir, Options{})
	kv, err := in.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultName + "_SEEN"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"i_old1", "i_old2", "b_deleted"} {
		if _, err := kv.Put(ctx, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "b_deleted"); err != nil {
		t.Fatal(err)
	}
	in = reopen(t, in, dir)
	r := indexOf(t, in)
	wantValue(t, r, "i_old1", "v-i_old1")
	wantValue(t, r, "i_old2", "v-i_old2")
	wantNone(t, r, "b_deleted")
	if _, err := in.js.Stream(ctx, "KV_"+DefaultName+"_SEEN"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the imported bucket is still there: %v", err)
	}
}

// TestSeqIndex checks the index against a map through random sets, merges
// and prunes.
func TestSeqIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x seqIndex
	ref := map[uint64]uint64{}
	hashes := make([]uint64, 5000)
	for i := range hashes {
		hashes[i] = rng.Uint64()
	}
	seq := uint64(0)
	first := uint64(0)
	for round := range 60_000 {
		h := hashes[rng.IntN(len(hashes))]
		seq++
		x.set(h, seq)
		ref[h] = seq
		if round%7919 == 0 {
			first = seq / 2
			x.prune(first)
			for k, v := range ref {
				if v < first {
					delete(ref, k)
				}
			}
		}
	}
	for _, h := range hashes {
		if got := x.get(h); got != ref[h] {
			t.Fatalf("hash %x: %d, want %d", h, got, ref[h])
		}
	}
	x.mergeAll()
	if n := x.len(first); n != len(ref) {
		t.Fatalf("%d entries, want %d", n, len(ref))
	}
	var y seqIndex
	y.reserve(len(ref))
	x.each(first, func(h, s uint64) {
		if !y.appendSorted(h, s) {
			t.Fatalf("each gave %x out of order", h)
		}
	})
	for h, s := range ref {
		if y.get(h) != s {
			t.Fatalf("copied index: hash %x: %d, want %d", h, y.get(h), s)
		}
	}
	if y.get(12345) != 0 && ref[12345] == 0 {
		t.Fatal("an absent hash found")
	}

	// addAll, as a read of the stream after a snapshot: later sequences,
	// several for a hash, in any order.
	var bulk []hashSeq
	for range 20_000 {
		h := hashes[rng.IntN(len(hashes))]
		if rng.IntN(4) == 0 {
			h = rng.Uint64() // a new key
		}
		seq++
		bulk = append(bulk, hashSeq{h, seq})
		ref[h] = seq
	}
	rng.Shuffle(len(bulk), func(i, j int) { bulk[i], bulk[j] = bulk[j], bulk[i] })
	y.addAll(bulk)
	for h, s := range ref {
		if y.get(h) != s {
			t.Fatalf("after addAll: hash %x: %d, want %d", h, y.get(h), s)
		}
	}
	if n := y.len(0); n != len(ref) {
		t.Fatalf("after addAll: %d entries, want %d", n, len(ref))
	}
}

// FuzzReadIndexFile: any file content is either refused or gives an index
// whose entries are in order, never a panic.
func FuzzReadIndexFile(f *testing.F) {
	good := func(entries [][2]uint64) []byte {
		dir := f.TempDir()
		r := &indexedRecords{idx: &seqIndex{}, file: filepath.Join(dir, "x.index")}
		for _, e := range entries {
			r.idx.set(e[0], e[1])
		}
		var buf []byte
		r.idx.mergeAll()
		buf = append(buf, indexMagic...)
		buf = le64(buf, 7)
		buf = le64(buf, 100)
		buf = le64(buf, uint64(r.idx.len(0)))
		r.idx.each(0, func(h, s uint64) { buf = le64(le64(buf, h), s) })
		return le32(buf, crc(buf))
	}
	f.Add(good(nil))
	f.Add(good([][2]uint64{{1, 5}, {1 << 60, 6}, {2, 9}}))
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "x.index")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		idx, covered, err := readIndexFile(path, 7, 0, 100)
		if err != nil {
			if !errors.Is(err, errIndexFile) {
				t.Fatalf("error not wrapping errIndexFile: %v", err)
			}
			return
		}
		if covered > 100 {
			t.Fatalf("covered %d past the stream's last sequence", covered)
		}
		for k := range idx.shards {
			base := idx.shards[k].base
			for i := 1; i < len(base); i++ {
				if base[i-1].hash >= base[i].hash {
					t.Fatal("entries out of order")
				}
			}
		}
	})
}

func le64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func le32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func crc(b []byte) uint32            { return crc32.ChecksumIEEE(b) }

// TestStatusesWrittenBeforeClose: every delivery whose handlers ran before
// Close has its status stored (the writes not waited for are written at
// Close), seen by the next Open.
func TestStatusesWrittenBeforeClose(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	ran := map[string]bool{}
	wh := newWebhooks(t)
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		mu.Lock()
		ran[e.ID] = true
		mu.Unlock()
		return nil
	})
	dir := t.TempDir()
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := range n {
		id := fmt.Sprintf("close-%05d", i)
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: unique(payload("close"), id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) == 0 {
		t.Fatal("no delivery ran before Close")
	}
	in = openInbox(t, dir, Options{})
	for id := range ran {
		r, err := in.Get(ctx, id)
		if err != nil || r.Status != delivery.StatusHandled {
			t.Fatalf("%s ran before Close; after it: %v %v (%d of %d ran)", id, r.Status, err, len(ran), n)
		}
	}
	t.Logf("%d of %d ran before Close, each with its status", len(ran), n)
}
