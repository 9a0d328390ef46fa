package recstore

import (
	"cmp"
	"slices"
)

// seqIndex maps the hashes of record keys to sequences in about 20 bytes a
// key (a Go map costs twice that): per shard (the hash's top byte) a sorted
// array, and a small map of what changed since it was last merged in.
type seqIndex struct {
	shards [256]seqShard
}

type seqShard struct {
	base   []hashSeq         // sorted by hash
	recent map[uint64]uint64 // newer than base; merged in when it grows
}

type hashSeq struct{ hash, seq uint64 }

func (x *seqIndex) shard(h uint64) *seqShard { return &x.shards[h>>56] }

// get returns the sequence of hash h; 0 when none.
func (x *seqIndex) get(h uint64) uint64 {
	s := x.shard(h)
	if seq, ok := s.recent[h]; ok {
		return seq
	}
	if i, ok := slices.BinarySearchFunc(s.base, h, func(e hashSeq, h uint64) int { return cmp.Compare(e.hash, h) }); ok {
		return s.base[i].seq
	}
	return 0
}

// set records seq for h unless h has a later one already.
func (x *seqIndex) set(h, seq uint64) {
	if seq <= x.get(h) {
		return
	}
	s := x.shard(h)
	if s.recent == nil {
		s.recent = make(map[uint64]uint64)
	}
	s.recent[h] = seq
	if len(s.recent) > len(s.base)/8+64 {
		s.merge()
	}
}

// merge moves recent into base.
func (s *seqShard) merge() {
	if len(s.recent) == 0 {
		return
	}
	add := make([]hashSeq, 0, len(s.recent))
	for h, seq := range s.recent {
		add = append(add, hashSeq{h, seq})
	}
	slices.SortFunc(add, func(a, b hashSeq) int { return cmp.Compare(a.hash, b.hash) })
	s.recent = nil
	s.mergeSorted(add)
}

// mergeSorted merges add, sorted by hash, one entry a hash, into base; an
// entry of add replaces base's for the same hash.
func (s *seqShard) mergeSorted(add []hashSeq) {
	out := make([]hashSeq, 0, len(s.base)+len(add))
	i, j := 0, 0
	for i < len(s.base) || j < len(add) {
		switch {
		case j == len(add) || i < len(s.base) && s.base[i].hash < add[j].hash:
			out = append(out, s.base[i])
			i++
		case i == len(s.base) || add[j].hash < s.base[i].hash:
			out = append(out, add[j])
			j++
		default: // the same hash: recent is newer
			out = append(out, add[j])
			i++
			j++
		}
	}
	s.base = out
}

// addAll adds many entries at once (a read of the stream), faster than a
// set each: they are sorted, the latest sequence of each hash kept, and
// merged shard by shard. It reorders entries.
func (x *seqIndex) addAll(entries []hashSeq) {
	x.mergeAll()
	slices.SortFunc(entries, func(a, b hashSeq) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	// One entry a hash, its latest.
	n := 0
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].hash == e.hash {
			continue
		}
		entries[n] = e
		n++
	}
	entries = entries[:n]
	for len(entries) > 0 {
		k := entries[0].hash >> 56
		end := len(entries)
		if k < 255 {
			end, _ = slices.BinarySearchFunc(entries, (k+1)<<56, func(e hashSeq, h uint64) int { return cmp.Compare(e.hash, h) })
		}
		s := &x.shards[k]
		if len(s.base) == 0 {
			s.base = slices.Clone(entries[:end])
		} else {
			// base's entries are older than the stream's read after them.
			s.mergeSorted(entries[:end])
		}
		entries = entries[end:]
	}
}

// prune drops the entries whose sequence is before first.
func (x *seqIndex) prune(first uint64) {
	for k := range x.shards {
		s := &x.shards[k]
		s.base = slices.DeleteFunc(s.base, func(e hashSeq) bool { return e.seq < first })
		for h, seq := range s.recent {
			if seq < first {
				delete(s.recent, h)
			}
		}
	}
}

// len counts the entries at or after first (after a merge, exactly).
func (x *seqIndex) len(first uint64) int {
	n := 0
	for k := range x.shards {
		for _, e := range x.shards[k].base {
			if e.seq >= first {
				n++
			}
		}
	}
	return n
}

// mergeAll merges every shard's recent changes.
func (x *seqIndex) mergeAll() {
	for k := range x.shards {
		x.shards[k].merge()
	}
}

// each calls fn with the entries at or after first, in the order of their
// hashes (which appendSorted expects); call mergeAll first.
func (x *seqIndex) each(first uint64, fn func(h, seq uint64)) {
	for k := range x.shards {
		for _, e := range x.shards[k].base {
			if e.seq >= first {
				fn(e.hash, e.seq)
			}
		}
	}
}

// reserve makes room for n entries spread over the shards, as a snapshot's
// are, so that loading it does not grow the arrays by doubling.
func (x *seqIndex) reserve(n int) {
	per := n/len(x.shards) + 4*isqrt(n/len(x.shards)) + 16
	for k := range x.shards {
		x.shards[k].base = make([]hashSeq, 0, per)
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// appendSorted adds an entry whose hash is above every one added before
// (a snapshot's, written in order by each); false when it is not.
func (x *seqIndex) appendSorted(h, seq uint64) bool {
	s := x.shard(h)
	if n := len(s.base); n > 0 && s.base[n-1].hash >= h {
		return false
	}
	s.base = append(s.base, hashSeq{h, seq})
	return true
}
