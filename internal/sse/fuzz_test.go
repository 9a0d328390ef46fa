package sse

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// reference is a deliberately naive reading of the standard's rules, written
// independently of Reader, that the fuzz target compares Reader against.
func reference(in string, max int) (events []ev, lastID string, retry time.Duration, retrySet bool) {
	in = strings.TrimPrefix(in, "\xef\xbb\xbf")
	var lines []string
	for {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			break // an unterminated last line is not a line
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var data strings.Builder
	var typ, idBuf string
	hasData, over := false, false
	for _, line := range lines {
		if len(line) > max {
			over = over || line[0] != ':'
			continue
		}
		if line == "" {
			lastID = idBuf
			if !over && hasData {
				t := typ
				if t == "" {
					t = "message"
				}
				events = append(events, ev{t, strings.TrimSuffix(data.String(), "\n"), lastID})
			} else if over {
				events = append(events, ev{Type: "TOO LARGE", ID: lastID})
			}
			data.Reset()
			typ, hasData, over = "", false, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ = value
		case "data":
			if data.Len()+len(value)+1 > max {
				over = true
			}
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuf = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				ms, err := strconv.ParseInt(value, 10, 64)
				if err != nil || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
					retry = time.Duration(1<<63 - 1)
				} else {
					retry = time.Duration(ms) * time.Millisecond
				}
				retrySet = true
			}
		}
	}
	return events, lastID, retry, retrySet
}

func read(r io.Reader, max int) (events []ev, rd *Reader, err error) {
	rd = NewReader(r, Options{MaxEventBytes: max})
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return events, rd, nil
		}
		if tl, ok := err.(*TooLargeError); ok {
			events = append(events, ev{Type: "TOO LARGE", ID: tl.LastEventID})
			continue
		}
		if err != nil {
			return events, rd, err
		}
		events = append(events, ev{e.Type, string(e.Data), e.LastEventID})
	}
}

// FuzzReader compares Reader with the reference reading, reading each input
// whole and one byte at a time, and checks that any data it reads can be written
// back with AppendFrame and read again unchanged.
func FuzzReader(f *testing.F) {
	for _, v := range vectors {
		if len(v.in) < 4096 {
			f.Add(v.in)
		}
	}
	f.Add("data: {\"x-forge-event\":\"ping\",\"body\":{},\"bodyB\":\"e30=\"}\r\n\r\n")
	f.Add("\xef\xbb\xbf:\rid:\x00\nretry:99999999999999999999\ndata\r\n\r")
	f.Fuzz(func(t *testing.T, in string) {
		const max = 32 // small, so that the size bound is exercised too
		want, wantID, wantRetry, wantSet := reference(in, max)
		for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
			got, rd, err := read(r, max)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%q: got %d events %q, want %d %q", in, len(got), got, len(want), want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q: event %d = %q, want %q", in, i, got[i], want[i])
				}
			}
			if rd.LastEventID() != wantID {
				t.Fatalf("%q: LastEventID = %q, want %q", in, rd.LastEventID(), wantID)
			}
			if r, ok := rd.Retry(); r != wantRetry || ok != wantSet {
				t.Fatalf("%q: Retry = %v %v, want %v %v", in, r, ok, wantRetry, wantSet)
			}
		}
		// Round trip of every event read without a bound.
		events, _, err := read(strings.NewReader(in), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			b, err := AppendFrame(nil, Frame{Type: e.Type, Data: []byte(e.Data)})
			if err != nil {
				t.Fatalf("AppendFrame(%q): %v", e, err) // a reader never yields CR or LF where they are not allowed
			}
			back, _, err := read(bytes.NewReader(b), 0)
			if err != nil || len(back) != 1 || back[0].Type != e.Type || back[0].Data != e.Data {
				t.Fatalf("round trip of %q gave %q, %v", e, back, err)
			}
		}
	})
}
