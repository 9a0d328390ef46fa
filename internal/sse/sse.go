// Package sse reads and writes Server-Sent Events streams (the text/event-stream
// format of the WHATWG HTML standard, section "Server-sent events").
//
// The reader follows the standard's parsing rules: lines end with CR, LF or CRLF; a
// leading byte order mark is skipped; a field's value loses one leading space;
// several data lines join with LF; "id" values holding NUL are ignored; "retry" is
// taken only when it is all ASCII digits; comment lines (a leading colon) are
// skipped; an event is dispatched by a blank line, and one left incomplete at the
// end of the stream is discarded.
//
// It departs from the standard in two deliberate ways, both for webhook relaying:
// bytes are passed through as they are, without replacing invalid UTF-8, so that a
// relayed body keeps every byte; and a line or event is bounded by a maximum size
// chosen by the caller rather than by a fixed 64 KiB line limit, because a relayed
// delivery is one line as long as its payload.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"forgehooks.dev/forgehooks/internal/bound"
)

// DefaultMaxEventBytes is the size bound a Reader uses when none is given: a line,
// and an event's joined data, may each be this long.
//
// It is sized for a relayed webhook delivery: the forge sends bodies of up to
// 25 MiB; a channel message carries the body once as JSON (up to 25 MiB) and once
// in standard base64 (4/3 of it, 33.4 MiB), plus the headers, about 58.4 MiB in
// all. 96 MiB leaves room for a relay that escapes the JSON body further.
const DefaultMaxEventBytes = 96 << 20

// ErrTooLarge is matched (with errors.Is) by the error Next returns for an event
// or a line longer than the Reader's bound. The Reader stays usable after it.
var ErrTooLarge = errors.New("sse: event too large")

// TooLargeError reports an event that was skipped because a line of it, or its
// data, was longer than the bound. Its fields and id were still read, so
// LastEventID moves past it and a reconnection does not ask for it again.
type TooLargeError struct {
	// Type is the event's type ("message" when it had no event field).
	Type string
	// LastEventID is the stream's last event ID after the skipped event.
	LastEventID string
	// Limit is the bound that was exceeded, in bytes.
	Limit int
}

// Error describes the skipped event and the bound.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("sse: %s event (last event id %q) skipped: longer than the %d-byte limit", e.Type, e.LastEventID, e.Limit)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Event is one dispatched event.
type Event struct {
	// Type is the event type: the last "event" field's value, or "message".
	Type string
	// Data is the event's data lines joined with LF, without a final LF. It
	// belongs to the caller: the Reader does not touch it again.
	Data []byte
	// LastEventID is the stream's last event ID when the event was dispatched:
	// the latest "id" field seen, in this event or an earlier one.
	LastEventID string
}

// Options tune a Reader.
type Options struct {
	// MaxEventBytes bounds a line and an event's data, in bytes. Zero:
	// DefaultMaxEventBytes. Negative: no bound.
	MaxEventBytes int
	// LastEventID seeds the stream's last event ID, for a reader of a
	// reconnected stream: events without an "id" field then keep the ID of the
	// previous connection, as browsers do, rather than resetting it.
	LastEventID string
}

// Reader parses a text/event-stream. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int

	started bool // the first line (which may start with a BOM) has been read
	skipLF  bool // the previous line ended in CR: a following LF is part of it

	line     []byte
	data     []byte
	typ      string
	idBuf    string
	lastID   string
	oversize bool

	retry    time.Duration
	retrySet bool
}

// NewReader returns a Reader of the stream r.
func NewReader(r io.Reader, opts Options) *Reader {
	max := bound.Value(opts.MaxEventBytes, DefaultMaxEventBytes, math.MaxInt)
	return &Reader{
		br:     bufio.NewReaderSize(r, 64<<10),
		max:    max,
		idBuf:  opts.LastEventID,
		lastID: opts.LastEventID,
	}
}

// LastEventID returns the stream's last event ID: the ID in force when the latest
// event was dispatched. A reconnecting client sends it as Last-Event-ID.
func (r *Reader) LastEventID() string { return r.lastID }

// Retry returns the reconnection time the stream asked for with a "retry" field,
// and whether it asked at all.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.retrySet }

// Next returns the next event. At the end of the stream it returns io.EOF (an
// incomplete last event is discarded); a read error of the underlying reader is
// returned as is. An event longer than the bound is skipped and reported as a
// *TooLargeError; reading may go on after it.
func (r *Reader) Next() (Event, error) {
	for {
		line, over, comment, err := r.readLine()
		if err != nil {
			if err == io.EOF {
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if over {
			// The line itself is dropped; unless it was a comment (such as
			// padding), its event is incomplete and is skipped.
			r.oversize = r.oversize || !comment
			continue
		}
		if len(line) == 0 {
			ev, ok, err := r.dispatch()
			if ok || err != nil {
				return ev, err
			}
			continue
		}
		r.field(line)
	}
}

// dispatch ends the current event, as the standard's "dispatch the event" steps.
func (r *Reader) dispatch() (Event, bool, error) {
	r.lastID = r.idBuf
	typ := r.typ
	if typ == "" {
		typ = "message"
	}
	data, over := r.data, r.oversize
	r.data, r.typ, r.oversize = nil, "", false
	if over {
		return Event{}, false, &TooLargeError{Type: typ, LastEventID: r.lastID, Limit: r.max}
	}
	if len(data) == 0 {
		return Event{}, false, nil
	}
	return Event{Type: typ, Data: data[:len(data)-1], LastEventID: r.lastID}, true, nil
}

// field processes one non-blank line.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return // a comment, such as a keep-alive
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		r.typ = string(value)
	case "data":
		if r.oversize {
			return
		}
		if len(r.data)+len(value)+1 > r.max {
			r.oversize, r.data = true, nil
			return
		}
		if len(r.data) == 0 && len(value) > 64<<10 {
			// A long single data line (a relayed delivery): take the line's
			// buffer instead of copying it, and let readLine start a new one.
			r.data = append(value, '\n')
			r.line = nil
			return
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.idBuf = string(value)
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			r.retry, r.retrySet = ms, true
		}
	}
}

// parseDigits parses a retry value: ASCII digits only, milliseconds, saturating
// rather than overflowing.
func parseDigits(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return time.Duration(1<<63 - 1), true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// readLine returns the next line without its end (CR, LF or CRLF). over reports
// a line longer than the bound, whose bytes were dropped, and comment whether that
// line was a comment. A line that the stream does not end is not a line: io.EOF
// is returned instead.
func (r *Reader) readLine() (line []byte, over, comment bool, err error) {
	if cap(r.line) > 1<<20 {
		r.line = nil // do not keep a long line's buffer for the short ones after it
	}
	r.line = r.line[:0]
	if !r.started {
		if err := r.skipBOM(); err != nil {
			return nil, false, false, err
		}
	}
	for {
		if r.br.Buffered() == 0 {
			// Wait for at least one byte, and no more, so that an event is
			// dispatched as soon as its blank line arrives.
			if _, err := r.br.Peek(1); err != nil {
				return nil, false, false, err // at io.EOF, a partial line is discarded
			}
		}
		chunk, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if chunk[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		end := bytes.IndexByte(chunk, '\n')
		scan := chunk
		if end >= 0 {
			scan = chunk[:end]
		}
		if cr := bytes.IndexByte(scan, '\r'); cr >= 0 {
			end = cr
		}
		n := len(chunk)
		if end >= 0 {
			n = end
		}
		if !over {
			if len(r.line)+n > r.max {
				// Whether the line is a comment is known from its first byte,
				// which is kept when it was in an earlier chunk.
				comment = len(r.line) > 0 && r.line[0] == ':' || len(r.line) == 0 && n > 0 && chunk[0] == ':'
				over, r.line = true, r.line[:0]
			} else {
				r.line = append(r.line, chunk[:n]...)
			}
		}
		if end < 0 {
			r.br.Discard(n)
			continue
		}
		r.skipLF = chunk[end] == '\r'
		r.br.Discard(end + 1)
		return r.line, over, comment, nil
	}
}

// skipBOM drops one byte order mark at the start of the stream. It waits for more
// bytes only while those read so far could begin a BOM.
func (r *Reader) skipBOM() error {
	if _, err := r.br.Peek(1); err != nil {
		return err
	}
	r.started = true
	for {
		b, _ := r.br.Peek(r.br.Buffered())
		n := min(len(b), len(bom))
		if !bytes.Equal(b[:n], bom[:n]) {
			return nil
		}
		if n == len(bom) {
			r.br.Discard(n)
			return nil
		}
		if _, err := r.br.Peek(n + 1); err != nil {
			return nil // a partial BOM at the end is data; the error comes again
		}
	}
}

var bom = []byte("\xef\xbb\xbf")
