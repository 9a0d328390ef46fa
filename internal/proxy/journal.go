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
	f       *os.File
	records int // records in the file
}

// createJournal starts a new journal file for a channel, with a new epoch.
func createJournal(dir, name, epoch string) (*journal, error) {
	j := &journal{path: filepath.Join(dir, name+journalExt), epoch: epoch}
	if err := j.compact(nil, 0); err != nil {
		return nil, err
	}
	return j, nil
}

// append records e, compacting the file to entries (the buffer after e was added
// and the limits applied) when the file has grown well past them.
func (j *journal) append(e entry, entries []entry) error {
	if j.records > 2*len(entries)+16 {
		return j.compact(entries, e.seq)
	}
	if _, err := j.f.Write(appendRecord(nil, e)); err != nil {
		return fmt.Errorf("proxy: journal %s: %w", j.path, err)
	}
	j.records++
	return nil
}

func appendRecord(b []byte, e entry) []byte {
	b = strconv.AppendUint(b, e.seq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.at.UnixMilli(), 10)
	b = append(b, ' ')
	b = append(b, e.data...)
	return append(b, '\n')
}

// compact rewrites the file with entries alone. head is the channel's last seq,
// kept in the header so that ids go on increasing after a restart even when no
// record is left.
func (j *journal) compact(entries []entry, head uint64) error {
	tmp, err := os.CreateTemp(filepath.Dir(j.path), ".journal-*")
	if err != nil {
		return fmt.Errorf("proxy: journal: %w", err)
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	w.WriteString(journalMagic + j.epoch + " " + strconv.FormatUint(head, 10) + "\n")
	var rec []byte
	for _, e := range entries {
		rec = appendRecord(rec[:0], e)
		w.Write(rec)
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
	return nil
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	return j.f.Close()
}

func (j *journal) remove() {
	j.close()
	os.Remove(j.path)
}

// ErrJournal is matched (with errors.Is) by errors reading a journal directory.
var ErrJournal = errors.New("proxy: bad journal")

// loadJournals reads every channel journal of dir (creating dir if needed). A
// file that is not a journal is an error; a last record cut short (the process
// stopped while writing it) is dropped.
func loadJournals(dir string, now time.Time, lim limits) (map[string]*channel, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("proxy: journal directory: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	if err != nil {
		return nil, err
	}
	chans := map[string]*channel{}
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), journalExt)
		if !validChannel(name) {
			continue
		}
		c, err := loadJournal(path, name, now, lim)
		if err != nil {
			return nil, err
		}
		chans[name] = c
	}
	return chans, nil
}

func loadJournal(path, name string, now time.Time, lim limits) (*channel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: journal: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	first, err := br.ReadString('\n')
	rest, ok := strings.CutPrefix(strings.TrimSuffix(first, "\n"), journalMagic)
	epoch, headStr, ok2 := strings.Cut(rest, " ")
	head, err2 := strconv.ParseUint(headStr, 10, 64)
	if err != nil || !ok || !ok2 || err2 != nil || epoch == "" || strings.Contains(epoch, "-") {
		return nil, fmt.Errorf("%w: %s does not start with %q, an epoch and a seq", ErrJournal, path, journalMagic)
	}
	c := newChannel(name, epoch)
	c.head = head
	var prev uint64
	for line := 2; ; line++ {
		rec, err := br.ReadBytes('\n')
		if err == io.EOF {
			break // a record without its newline was cut short: drop it
		}
		if err != nil {
			return nil, fmt.Errorf("proxy: journal %s: %w", path, err)
		}
		e, ok := parseRecord(rec[:len(rec)-1])
		if !ok || e.seq <= prev {
			return nil, fmt.Errorf("%w: %s line %d is not a record after seq %d", ErrJournal, path, line, prev)
		}
		prev = e.seq
		c.entries = append(c.entries, e)
		c.bytes += int64(len(e.data))
		c.head = max(c.head, e.seq)
	}
	c.evictLocked(now, lim)
	c.journal = &journal{path: path, epoch: epoch}
	// Rewrite at once: drops a cut record and what the limits no longer keep,
	// and opens the file for appending.
	if err := c.journal.compact(c.entries, c.head); err != nil {
		return nil, err
	}
	return c, nil
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
