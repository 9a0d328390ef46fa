package recstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/internal/atomicfile"
)

// The snapshot of an index (Indexed), little-endian:
//
//	magic   8 bytes "fhindex1"
//	created 8 bytes the stream's creation time, Unix nanoseconds
//	covered 8 bytes every record up to this sequence is in the index
//	count   8 bytes
//	count × (hash 8 bytes, sequence 8 bytes)
//	crc     4 bytes CRC-32 (IEEE) of all the above
//
// A snapshot of another stream (one deleted and made again), or one that
// covers sequences the stream does not have (a store restored from an older
// copy), is not used: the index is rebuilt from the stream.
const indexMagic = "fhindex1"

// errIndexFile is a snapshot that cannot be used.
var errIndexFile = errors.New("not a usable index file")

// load fills the index: from the snapshot when it fits the stream, then the
// records written after it.
func (r *Indexed) load(ctx context.Context) error {
	info, err := r.stream.Info(ctx)
	if err != nil {
		return err
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	from := first
	// Each key costs a stored record at least two bytes (itself and a
	// separator): an index of more entries than that is not this one.
	idx, covered, err := readIndexFile(r.file, info.Created.UnixNano(), first, last, info.State.Bytes/2)
	switch {
	case err == nil:
		r.idx, from = idx, max(first, covered+1)
	case !errors.Is(err, fs.ErrNotExist):
		r.log.Warn("inbox: the index file is not used; the index is read from the stream", "file", r.file, "error", err)
	}
	if r.idx == nil {
		r.idx = &seqIndex{}
	}
	r.first, r.covered = first, last
	if info.State.Msgs == 0 || from > last {
		return nil
	}
	r.changed = true
	read, err := r.scan(ctx, from, last)
	r.since = len(read)
	if r.since >= loadSnapshotEntries {
		// Written at once (maintain), in the background: the next start,
		// after another kill, reads only what comes after, not the tails
		// of every run killed before it.
		r.saved = time.Time{}
		r.due <- struct{}{}
	}
	r.idx.addAll(read)
	return err
}

// scan reads the records from sequence from to to, as a stream (the
// consumer sends ahead while the last ones are being read), and returns
// their entries for the index.
func (r *Indexed) scan(ctx context.Context, from, to uint64) (read []hashSeq, err error) {
	cons, err := r.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessagesWithBytesLimit(8192, 8<<20))
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	read = make([]hashSeq, 0, min(to-from+1, 1<<22))
	for {
		// A record of the range may age out while it is read: a pause
		// means none is left.
		m, err := it.Next(jetstream.NextMaxWait(2 * time.Second))
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return read, nil
		}
		if err != nil {
			return read, err
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		seq := md.Sequence.Stream
		recordKeys(m.Data(), func(k []byte) { read = append(read, hashSeq{keyHash(string(k)), seq}) })
		if seq >= to {
			return read, nil
		}
	}
}

// readIndexFile reads a snapshot written for the stream created at created,
// keeping the entries at or after first; covered must not pass last, nor
// its entries maxEntries. Only a regular file is read, and only when its
// size fits maxEntries.
func readIndexFile(path string, created int64, first, last, maxEntries uint64) (*seqIndex, uint64, error) {
	maxSize := int64(32 + 4 + 16*min(maxEntries, 1<<40))
	f, st, err := OpenRegular(path, maxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, err
	case err != nil:
		return nil, 0, fmt.Errorf("%w: %v", errIndexFile, err)
	}
	defer f.Close()
	crc := crc32.NewIEEE()
	br := bufio.NewReaderSize(f, 64<<10)
	var head [32]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errIndexFile, err)
	}
	crc.Write(head[:])
	le := binary.LittleEndian
	if string(head[:8]) != indexMagic {
		return nil, 0, fmt.Errorf("%w: no %q at its start", errIndexFile, indexMagic)
	}
	switch covered, count := le.Uint64(head[16:]), le.Uint64(head[24:]); {
	case int64(le.Uint64(head[8:])) != created:
		return nil, 0, fmt.Errorf("%w: written for another stream of the same name", errIndexFile)
	case covered > last:
		return nil, 0, fmt.Errorf("%w: it covers sequence %d, the stream ends at %d", errIndexFile, covered, last)
	case count != uint64(st.Size()-32-4)/16 || uint64(st.Size()) != 32+16*count+4:
		return nil, 0, fmt.Errorf("%w: %d entries do not fit its size", errIndexFile, count)
	default:
		idx := &seqIndex{}
		idx.reserve(int(count))
		var e [16]byte
		for range count {
			if _, err := io.ReadFull(br, e[:]); err != nil {
				return nil, 0, fmt.Errorf("%w: %v", errIndexFile, err)
			}
			crc.Write(e[:])
			if seq := le.Uint64(e[8:]); seq >= first && !idx.appendSorted(le.Uint64(e[:8]), seq) {
				return nil, 0, fmt.Errorf("%w: its entries are not in order", errIndexFile)
			}
		}
		var sum [4]byte
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", errIndexFile, err)
		}
		if le.Uint32(sum[:]) != crc.Sum32() {
			return nil, 0, fmt.Errorf("%w: its checksum does not match", errIndexFile)
		}
		return idx, covered, nil
	}
}

// snapshot writes the index to its file: every record up to the stream's
// last sequence, read first, is in it once the puts under way are applied.
func (r *Indexed) snapshot(ctx context.Context) error {
	info, err := r.stream.Info(ctx)
	if err != nil {
		return err
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	err = atomicfile.WriteFunc(r.file, 0o600, func(w io.Writer) error {
		crc := crc32.NewIEEE()
		bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
		le := binary.LittleEndian
		// The index is written under the lock, into the file's buffer,
		// rather than copied: a copy would cost its size again in memory.
		r.mu.Lock()
		var head [32]byte
		copy(head[:], indexMagic)
		le.PutUint64(head[8:], uint64(info.Created.UnixNano()))
		r.idx.mergeAll()
		if !r.rescan {
			r.covered = max(r.covered, info.State.LastSeq)
		}
		le.PutUint64(head[16:], r.covered)
		le.PutUint64(head[24:], uint64(r.idx.len(r.first)))
		bw.Write(head[:])
		var e [16]byte
		r.idx.each(r.first, func(h, seq uint64) {
			le.PutUint64(e[:8], h)
			le.PutUint64(e[8:], seq)
			bw.Write(e[:])
		})
		r.changed = false
		r.saved = time.Now()
		r.since = 0
		r.mu.Unlock()
		if err := bw.Flush(); err != nil {
			return err
		}
		var sum [4]byte
		le.PutUint32(sum[:], crc.Sum32())
		_, err := w.Write(sum[:])
		return err
	})
	if err != nil {
		r.mu.Lock()
		r.changed = true
		r.mu.Unlock()
	}
	return err
}
