package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ev is an event as the vectors write it.
type ev struct {
	Type, Data, ID string
}

// vectors hold one case per parsing rule of the WHATWG standard, plus the cases
// that webhook relaying depends on.
var vectors = []struct {
	name   string
	in     string
	seed   string // Options.LastEventID
	want   []ev
	lastID string
	retry  time.Duration // 0: no retry field taken
}{
	{name: "LF line ends", in: "data: a\n\n", want: []ev{{"message", "a", ""}}},
	{name: "CRLF line ends", in: "data: a\r\n\r\n", want: []ev{{"message", "a", ""}}},
	{name: "CR line ends", in: "data: a\r\rdata: b\r\r", want: []ev{{"message", "a", ""}, {"message", "b", ""}}},
	{name: "mixed line ends", in: "data: a\rdata: b\ndata: c\r\n\n", want: []ev{{"message", "a\nb\nc", ""}}},
	{name: "CR then LF is one line end, CR CR is two", in: "data: a\r\n\rdata: b\r\r\n", want: []ev{{"message", "a", ""}, {"message", "b", ""}}},
	{name: "one leading space stripped", in: "data:  two\n\n", want: []ev{{"message", " two", ""}}},
	{name: "no space after colon", in: "data:x\n\n", want: []ev{{"message", "x", ""}}},
	{name: "tab is not stripped", in: "data:\tx\n\n", want: []ev{{"message", "\tx", ""}}},
	{name: "multi-line data joined with LF", in: "data: a\ndata: b\ndata\ndata: c\n\n", want: []ev{{"message", "a\nb\n\nc", ""}}},
	{name: "field without colon is an empty value", in: "data\n\n", want: []ev{{"message", "", ""}}},
	{name: "value keeps later colons", in: "data: a: b:c\n\n", want: []ev{{"message", "a: b:c", ""}}},
	{name: "event type", in: "event: ready\ndata: {}\n\n", want: []ev{{"ready", "{}", ""}}},
	{name: "event type resets after dispatch", in: "event: ready\ndata: 1\n\ndata: 2\n\n", want: []ev{{"ready", "1", ""}, {"message", "2", ""}}},
	{name: "empty event type is message", in: "event\ndata: 1\n\n", want: []ev{{"message", "1", ""}}},
	{name: "no data: not dispatched, type discarded", in: "event: ping\n\ndata: 1\n\n", want: []ev{{"message", "1", ""}}},
	{name: "field names are case-sensitive", in: "Data: x\nDATA: y\ndata: z\n\n", want: []ev{{"message", "z", ""}}},
	{name: "unknown fields ignored", in: "foo: bar\ndata: z\n\n", want: []ev{{"message", "z", ""}}},
	{name: "comments ignored", in: ": keep-alive\n:\ndata: a\n: in between\ndata: b\n\n", want: []ev{{"message", "a\nb", ""}}},
	{name: "comment-only stream dispatches nothing", in: ":ping\n\n:ping\n\n", want: nil},
	{name: "id sets last event id", in: "id: 7\ndata: a\n\n", want: []ev{{"message", "a", "7"}}, lastID: "7"},
	{name: "id persists over later events", in: "id: 7\ndata: a\n\ndata: b\n\n", want: []ev{{"message", "a", "7"}, {"message", "b", "7"}}, lastID: "7"},
	{name: "empty id resets", in: "id: 7\ndata: a\n\nid\ndata: b\n\n", want: []ev{{"message", "a", "7"}, {"message", "b", ""}}},
	{name: "id with NUL ignored", in: "id: 7\ndata: a\n\nid: 8\x009\ndata: b\n\n", want: []ev{{"message", "a", "7"}, {"message", "b", "7"}}, lastID: "7"},
	{name: "id without data still moves last event id", in: "id: 3\n\n", want: nil, lastID: "3"},
	{name: "id is set at dispatch, not before", in: "id: 3\ndata: x", want: nil, lastID: ""},
	{name: "id keeps spaces after the first", in: "id:  a b \ndata: x\n\n", want: []ev{{"message", "x", " a b "}}, lastID: " a b "},
	{name: "seeded id survives events without id", seed: "41", in: "event: ready\ndata: {}\n\n", want: []ev{{"ready", "{}", "41"}}, lastID: "41"},
	{name: "seeded id replaced by a new one", seed: "41", in: "id: 42\ndata: x\n\n", want: []ev{{"message", "x", "42"}}, lastID: "42"},
	{name: "retry in milliseconds", in: "retry: 2500\n", retry: 2500 * time.Millisecond},
	{name: "retry not all digits ignored", in: "retry: 1000\nretry: 25x\nretry: -5\nretry: 1.5\nretry\n", retry: time.Second},
	{name: "retry with space inside ignored", in: "retry: 10 0\n", retry: 0},
	{name: "leading BOM skipped", in: "\xef\xbb\xbfdata: a\n\n", want: []ev{{"message", "a", ""}}},
	{name: "only one BOM skipped", in: "\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", want: []ev{{"message", "b", ""}}},
	{name: "BOM later is data", in: "data: \xef\xbb\xbfa\n\n", want: []ev{{"message", "\xef\xbb\xbfa", ""}}},
	{name: "incomplete last event discarded", in: "data: a\n\ndata: b\n", want: []ev{{"message", "a", ""}}},
	{name: "unterminated last line discarded", in: "data: a\n\ndata: b", want: []ev{{"message", "a", ""}}},
	{name: "invalid UTF-8 passed through", in: "data: \xff\xfe\n\n", want: []ev{{"message", "\xff\xfe", ""}}},
	{name: "NUL in data kept", in: "data: a\x00b\n\n", want: []ev{{"message", "a\x00b", ""}}},
	{name: "blank lines alone dispatch nothing", in: "\n\n\r\n\r\r", want: nil},
	{name: "line longer than 64 KiB", in: "data: " + strings.Repeat("x", 200<<10) + "\n\n", want: []ev{{"message", strings.Repeat("x", 200<<10), ""}}},
}

// readAll reads every event, failing the test on errors other than io.EOF.
func readAll(t *testing.T, r io.Reader, opts Options) ([]ev, *Reader) {
	t.Helper()
	rd := NewReader(r, opts)
	var got []ev
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return got, rd
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, ev{e.Type, string(e.Data), e.LastEventID})
	}
}

func TestVectors(t *testing.T) {
	// Each vector is read whole, one byte at a time (so that a CRLF is split
	// across reads), and in two halves.
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halves": func(s string) io.Reader {
			return io.MultiReader(iotest.HalfReader(strings.NewReader(s)), strings.NewReader(""))
		},
	}
	for _, v := range vectors {
		for rname, mk := range readers {
			t.Run(v.name+"/"+rname, func(t *testing.T) {
				got, rd := readAll(t, mk(v.in), Options{LastEventID: v.seed})
				if diff := cmp.Diff(v.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if rd.LastEventID() != v.lastID {
					t.Errorf("LastEventID() = %q, want %q", rd.LastEventID(), v.lastID)
				}
				retry, ok := rd.Retry()
				if ok != (v.retry != 0) || retry != v.retry {
					t.Errorf("Retry() = %v, %v; want %v", retry, ok, v.retry)
				}
			})
		}
	}
}

func TestTooLarge(t *testing.T) {
	big := strings.Repeat("y", 100)
	tests := []struct {
		name string
		in   string
		want []string // "E" for a TooLargeError, else the data
	}{
		{"long line skipped, next event read", "id: 1\ndata: " + big + "\n\nid: 2\ndata: ok\n\n", []string{"E:1", "ok"}},
		{"long data over several lines", "data: " + big[:40] + "\ndata: " + big[:40] + "\n\ndata: ok\n\n", []string{"E:", "ok"}},
		{"id after the long line still counts", "data: " + big + "\nid: 9\n\ndata: ok\n\n", []string{"E:9", "ok"}},
		{"long comment skipped alone", ":" + big + "\ndata: ok\n\n", []string{"ok"}},
		{"exactly at the limit", "data: " + big[:63] + "\n\n", []string{big[:63]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := NewReader(iotest.OneByteReader(strings.NewReader(tt.in)), Options{MaxEventBytes: 70})
			var got []string
			for {
				e, err := rd.Next()
				if err == io.EOF {
					break
				}
				var tl *TooLargeError
				switch {
				case errors.As(err, &tl):
					if !errors.Is(err, ErrTooLarge) {
						t.Errorf("errors.Is(%v, ErrTooLarge) = false", err)
					}
					got = append(got, "E:"+tl.LastEventID)
				case err != nil:
					t.Fatalf("Next: %v", err)
				default:
					got = append(got, string(e.Data))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadErrorPassedOn(t *testing.T) {
	boom := errors.New("connection reset")
	rd := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), Options{})
	if e, err := rd.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("first Next = %q, %v", e.Data, err)
	}
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("second Next error = %v, want %v", err, boom)
	}
}

// TestDispatchWithoutWaiting checks that an event is returned as soon as its
// blank line is read, without waiting for further bytes (which, on a live stream,
// may not come for a long time).
func TestDispatchWithoutWaiting(t *testing.T) {
	for _, end := range []string{"\n\n", "\r\r", "\r\n\r\n"} {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte("data: a" + end))
			// The pipe stays open: a reader that waits for more bytes blocks here
			// until the test closes it, and the test then sees io.EOF instead.
		}()
		rd := NewReader(pr, Options{})
		e, err := rd.Next()
		pw.Close()
		if err != nil || string(e.Data) != "a" {
			t.Errorf("line end %q: Next = %q, %v", end, e.Data, err)
		}
	}
}

func TestAppendFrameRoundTrip(t *testing.T) {
	frames := []Frame{
		{Data: []byte("hello")},
		{Type: "ready", ID: "1-0", Data: []byte("{}")},
		{ID: "x", Data: []byte(" leading space and\nsecond line\n")},
		{Data: []byte("")},
		{Data: []byte("\n\n")},
		{Type: "message", Data: []byte(`{"a":"<>&"}`), Retry: 1500 * time.Millisecond},
	}
	var buf []byte
	var err error
	for _, f := range frames {
		buf, err = AppendFrame(buf, f)
		if err != nil {
			t.Fatal(err)
		}
		buf = AppendComment(buf, "keep-alive")
	}
	rd := NewReader(bytes.NewReader(buf), Options{})
	lastID := ""
	for i, f := range frames {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.ID != "" {
			lastID = f.ID
		}
		wantType := f.Type
		if wantType == "" {
			wantType = "message"
		}
		if e.Type != wantType || !bytes.Equal(e.Data, f.Data) || e.LastEventID != lastID {
			t.Errorf("frame %d: got %q %q %q, want %q %q %q", i, e.Type, e.Data, e.LastEventID, wantType, f.Data, lastID)
		}
	}
	if r, ok := rd.Retry(); !ok || r != 1500*time.Millisecond {
		t.Errorf("Retry() = %v, %v", r, ok)
	}
}

func TestAppendFrameRejects(t *testing.T) {
	for _, f := range []Frame{
		{Type: "a\nb", Data: []byte("x")},
		{ID: "1\r", Data: []byte("x")},
		{ID: "1\x00", Data: []byte("x")},
		{Data: []byte("a\r\nb")},
	} {
		out, err := AppendFrame([]byte("keep"), f)
		if !errors.Is(err, ErrInvalidField) {
			t.Errorf("AppendFrame(%+v) error = %v, want ErrInvalidField", f, err)
		}
		if string(out) != "keep" {
			t.Errorf("AppendFrame(%+v) appended %q on error", f, out)
		}
	}
}

func TestAppendComment(t *testing.T) {
	for in, want := range map[string]string{"": ":\n", "ping": ": ping\n", "a\r\nb": ": a\n: b\n", "\n": ":\n"} {
		if got := string(AppendComment(nil, in)); got != want {
			t.Errorf("AppendComment(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAppendRetry: a retry field read back sets the reader's delay and,
// without a data line, dispatches no event (the inspector opens its stream so).
func TestAppendRetry(t *testing.T) {
	b := append(AppendComment(AppendRetry(nil, 1500*time.Millisecond), "connected"), '\n')
	if string(b) != "retry: 1500\n: connected\n\n" {
		t.Fatalf("AppendRetry = %q", b)
	}
	r := NewReader(strings.NewReader(string(b)), Options{})
	if e, err := r.Next(); err != io.EOF {
		t.Fatalf("Next = %+v, %v; want no event", e, err)
	}
	if d, ok := r.Retry(); !ok || d != 1500*time.Millisecond {
		t.Errorf("Retry = %v, %v", d, ok)
	}
}

// TestMaxEventBytesRule: zero is DefaultMaxEventBytes, negative no bound.
func TestMaxEventBytesRule(t *testing.T) {
	for v, want := range map[int]int{0: DefaultMaxEventBytes, -1: math.MaxInt, 10: 10} {
		if got := NewReader(strings.NewReader(""), Options{MaxEventBytes: v}).max; got != want {
			t.Errorf("MaxEventBytes %d: bound %d, want %d", v, got, want)
		}
	}
}

func ExampleReader() {
	stream := "retry: 2000\n: keep-alive\nevent: ready\ndata: {}\n\nid: 1\ndata: {\"a\":1}\n\n"
	r := NewReader(strings.NewReader(stream), Options{})
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		fmt.Printf("%s %q id=%q\n", e.Type, e.Data, e.LastEventID)
	}
	retry, _ := r.Retry()
	fmt.Println("reconnect with Last-Event-ID", r.LastEventID(), "after", retry)
	// Output:
	// ready "{}" id=""
	// message "{\"a\":1}" id="1"
	// reconnect with Last-Event-ID 1 after 2s
}

func ExampleAppendFrame() {
	b, _ := AppendFrame(nil, Frame{ID: "7", Data: []byte("line one\nline two")})
	fmt.Print(string(b))
	// Output:
	// id: 7
	// data: line one
	// data: line two
}

// BenchmarkReaderLargeEvent reads a 4 MiB single-line event, the shape of a
// relayed delivery.
func BenchmarkReaderLargeEvent(b *testing.B) {
	frame, err := AppendFrame(nil, Frame{ID: "1", Data: bytes.Repeat([]byte("x"), 4<<20)})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		rd := NewReader(bytes.NewReader(frame), Options{})
		if _, err := rd.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
