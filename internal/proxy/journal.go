package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The journal keeps each channel's replay buffer in a file, so that a restarted
// proxy still replays to a client that comes back with a Last-Event-ID. One file
// per channel, "<channel>.journal", of lines:
//
//	forgehooks-proxy-journal 1 <epoch> <last seq given out when written>
//	<seq> <unix milliseconds> <message data>
//	...
//
// A record is appended per delivery; when the file holds well over what the
// buffer keeps, it is rewritten with the buffer alone (through a temporary file
// and a rename), so its size follows the buffer's limits. Records are not synced
// to disk one by one: the journal survives a restart of the process, not a crash
// of the machine, which is what a development proxy needs.
const journalMagic = "forgehooks-proxy-journal 1 "

const journalExt = ".journal"

// journal is one channel's open journal file.
type journal struct {
	path    string
	epoch   string
	totals  *totals
	f       *os.File
	records int   // records in the file
	size    int64 // bytes of the file
}

// createJournal starts a new journal file for a channel, with a new epoch.
func createJournal(dir, name, epoch string, t *totals) (*journal, error) {
	j := &journal{path: filepath.Join(dir, name+journalExt), epoch: epoch, totals: t}
	if err := j.compact(nil, 0); err != nil {
		return nil, err
	}
	return j, nil
}

// append records e, compacting the file to entries (the buffer after e was added
// and the limits applied, bytes in all) instead when the file has grown well
// past them.
func (j *journal) append(e entry, entries []entry, bytes int64) error {
	if j.records > 2*len(entries)+16 || j.size > 2*bytes+1<<20 {
		return j.compact(entries, e.seq)
	}
	// The record in pieces: its data can be tens of MiB, and needs no copy.
	var num [48]byte
	var written int64
	for _, piece := range [][]byte{recordHeader(num[:0], e), e.data, {'\n'}} {
		n, err := j.f.Write(piece)
		written += int64(n)
		if err != nil {
			j.grow(written)
			return fmt.Errorf("proxy: journal %s: %w", j.path, err)
		}
	}
	j.grow(written)
	j.records++
	return nil
}

// recordHeader appends what comes before a record's data: "<seq> <ms> ".
func recordHeader(b []byte, e entry) []byte {
	b = strconv.AppendUint(b, e.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.at.UnixMilli(), 10)
	return append(b, ' ')
}

func (j *journal) grow(n int64) {
	j.size += n
	j.totals.journal.Add(n)
}

// compact rewrites the file with entries alone. head is the channel's last seq,
// kept in the header so that ids go on increasing after a restart even when no
// record is left. It writes from the entries in memory through a small buffer:
// it needs no memory beyond what the buffer already holds.
func (j *journal) compact(entries []entry, head uint64) error {
	tmp, err := os.CreateTemp(filepath.Dir(j.path), ".journal-*")
	if err != nil {
		return fmt.Errorf("proxy: journal: %w", err)
	}
	w := bufio.NewWriterSize(tmp, 64<<10)
	n, _ := w.WriteString(journalMagic + j.epoch + " " + strconv.FormatUint(head, 10) + "\n")
	size := int64(n)
	var num [48]byte
	for _, e := range entries {
		// The record in pieces: its data can be tens of MiB, and needs no copy.
		hdr := recordHeader(num[:0], e)
		w.Write(hdr)
		w.Write(e.data)
		w.WriteByte('\n')
		size += int64(len(hdr) + len(e.data) + 1)
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("proxy: journal %s: %w", j.path, err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, j.records = tmp, len(entries)
	j.grow(size - j.size)
	return nil
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func (j *journal) remove() {
	j.close()
	os.Remove(j.path)
	j.grow(-j.size)
}

// ErrJournal is matched (with errors.Is) by errors reading a journal directory.
var ErrJournal = errors.New("proxy: bad journal")

// loader reads journals within the bounds of a Server: a record longer than
// maxRecord is skipped, each channel's buffer is held to lim as it is read, and
// the buffers of all channels read so far to maxBuffered, by dropping the
// oldest deliveries first. Loading thus never holds more than the bounds plus
// one record, however large the files.
type loader struct {
	now         time.Time
	lim         limits
	maxRecord   int
	maxBuffered int64
	totals      *totals
	chans       map[string]*channel
	skipped     int // records over maxRecord
}

// loadJournals reads every channel journal of dir (creating dir if needed). A
// file that is not a journal is an error; a last record cut short (the process
// stopped while writing it) is dropped.
func (ld *loader) loadJournals(dir string) (map[string]*channel, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("proxy: journal directory: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	if err != nil {
		return nil, err
	}
	ld.chans = map[string]*channel{}
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), journalExt)
		if !validChannel(name) {
			continue
		}
		c, err := ld.loadJournal(path, name)
		if err != nil {
			for _, c := range ld.chans {
				c.journal.close()
			}
			return nil, err
		}
		ld.chans[name] = c
	}
	// Rewrite at once: drops a cut record and what the bounds no longer keep,
	// and opens the files for appending.
	for _, c := range ld.chans {
		if err := c.journal.compact(c.entries, c.head); err != nil {
			return nil, err
		}
	}
	return ld.chans, nil
}

func (ld *loader) loadJournal(path, name string) (*channel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: journal: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	first, scratch, tooLong, err := readLine(br, nil, 256)
	rest, ok := strings.CutPrefix(string(first), journalMagic)
	epoch, headStr, ok2 := strings.Cut(rest, " ")
	head, err2 := strconv.ParseUint(headStr, 10, 64)
	if err != nil || tooLong || !ok || !ok2 || err2 != nil || epoch == "" || strings.Contains(epoch, "-") {
		return nil, fmt.Errorf("%w: %s does not start with %q, an epoch and a seq", ErrJournal, path, journalMagic)
	}
	c := newChannel(name, epoch, ld.totals, ld.now)
	c.head = head
	c.journal = &journal{path: path, epoch: epoch, totals: ld.totals}
	if st, err := f.Stat(); err == nil {
		c.journal.grow(st.Size())
	}
	fail := func(err error) (*channel, error) {
		c.dropFirst(len(c.entries))
		c.journal.grow(-c.journal.size)
		return nil, err
	}
	var prev uint64
	for line := 2; ; line++ {
		var rec []byte
		rec, scratch, tooLong, err = readLine(br, scratch, ld.maxRecord)
		if err == io.EOF {
			break // a record without its newline was cut short: drop it
		}
		if err != nil {
			return fail(fmt.Errorf("proxy: journal %s: %w", path, err))
		}
		if tooLong {
			ld.skipped++
			continue
		}
		e, ok := parseRecord(rec)
		if !ok || e.seq <= prev {
			return fail(fmt.Errorf("%w: %s line %d is not a record after seq %d", ErrJournal, path, line, prev))
		}
		prev = e.seq
		c.head = max(c.head, e.seq)
		c.add(e)
		c.evictLocked(ld.now, ld.lim)
		for ld.totals.buffered.Load() > ld.maxBuffered {
			ld.chans[name] = c // so that its own oldest are candidates too
			evictOldestOf(ld.chans)
		}
		delete(ld.chans, name)
	}
	return c, nil
}

// readLine reads one line, without its newline, of at most max bytes, into
// scratch (grown as needed and returned for the next call); a longer one is
// read to its end and discarded (tooLong). A last line without newline is
// io.EOF. The line is valid until the next call.
func readLine(br *bufio.Reader, scratch []byte, max int) (line, grown []byte, tooLong bool, err error) {
	line = scratch[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong = true
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return nil, line, false, err
		}
		if tooLong {
			return nil, line, true, nil
		}
		return line[:len(line)-1], line, false, nil
	}
}

func parseRecord(rec []byte) (entry, bool) {
	seqB, rest, ok1 := bytes.Cut(rec, []byte(" "))
	msB, data, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 {
		return entry{}, false
	}
	seq, err1 := strconv.ParseUint(string(seqB), 10, 64)
	ms, err2 := strconv.ParseInt(string(msB), 10, 64)
	// A CR would end the event's data line early when it is sent.
	if err1 != nil || err2 != nil || seq == 0 || bytes.IndexByte(data, '\r') >= 0 {
		return entry{}, false
	}
	return entry{seq: seq, at: time.UnixMilli(ms), data: bytes.Clone(data)}, true
}
