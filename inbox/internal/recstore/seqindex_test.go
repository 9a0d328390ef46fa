package recstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

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
		r := &Indexed{idx: &seqIndex{}, file: filepath.Join(dir, "x.index")}
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
		idx, covered, err := readIndexFile(path, 7, 0, 100, 1<<20)
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
