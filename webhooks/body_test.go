package webhooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// shortReads returns at most n bytes per Read, as a network connection does.
type shortReads struct {
	r   io.Reader
	rnd *rand.Rand
}

func (s *shortReads) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1+s.rnd.IntN(min(len(p), 70000))]
	}
	return s.r.Read(p)
}

// TestReadBodyPieces reads bodies of many sizes, with Content-Length right,
// short, long and absent, in short reads, and checks the bytes and what was
// hashed.
func TestReadBodyPieces(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const max = 1 << 20
	for _, size := range []int{0, 1, 511, 512, 513, 65535, 65536, 65537, 100000, 131072, 300001, max - 1, max} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(rnd.Uint32())
		}
		for _, cl := range []int64{int64(size), -1, int64(size) - 1, int64(size) + 1, int64(size) / 3} {
			if cl < -1 {
				continue
			}
			var h bytes.Buffer
			got, err := readBody(&shortReads{bytes.NewReader(body), rnd}, cl, max, &h, nil, nil)
			if err != nil {
				t.Fatalf("size %d, Content-Length %d: %v", size, cl, err)
			}
			if !bytes.Equal(got, body) || !bytes.Equal(h.Bytes(), body) {
				t.Fatalf("size %d, Content-Length %d: read %d bytes, hashed %d", size, cl, len(got), h.Len())
			}
		}
		if _, err := readBody(bytes.NewReader(append(body, make([]byte, max+1-size)...)), -1, max, io.Discard, nil, nil); err != errTooLarge {
			t.Fatalf("size %d padded past the limit: %v", size, err)
		}
	}
}

// TestReadBodyMemory: reading a large body allocates at most 2.5 times its
// size with a Content-Length and 3.8 without (buffers that grow as bytes
// arrive, and a last copy to the body's size), and what it holds at the end
// is the one buffer it returns, reserved.
func TestReadBodyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 60 MiB")
	}
	for _, size := range []int{24 << 20, 17 << 20, 25<<20 - 1} {
		memory(t, size)
	}
}

func memory(t *testing.T, size int) {
	body := bytes.Repeat([]byte("x"), size)
	for _, tt := range []struct {
		name  string
		cl    int64
		bound float64
	}{{"Content-Length", int64(size), 2.5}, {"chunked", -1, 3.8}} {
		t.Run(fmt.Sprintf("%s/%d", tt.name, size), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b := newBudget(1 << 40)
			res := b.Reserve("", time.Time{})
			got, err := readBody(&shortReads{bytes.NewReader(body), rand.New(rand.NewPCG(3, 4))}, tt.cl, DefaultMaxBodyBytes, io.Discard, &res, nil)
			runtime.ReadMemStats(&after)
			if err != nil || len(got) != size {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
			alloc := float64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("allocated %.2f times the body, reserved %.2f times", alloc/float64(size), float64(res.Held())/float64(size))
			if res.Held() != int64(cap(got)) {
				t.Errorf("holds %d bytes at the end, the buffer has %d", res.Held(), cap(got))
			}
			res.Release()
			if b.Used() != 0 {
				t.Errorf("budget holds %d bytes after release", b.Used())
			}
			if alloc > tt.bound*float64(size)+1<<20 {
				t.Errorf("allocated %.0f bytes for a %d-byte body: more than %.1f times", alloc, size, tt.bound)
			}
		})
	}
}

// TestReadBodyBudget: a body is charged as it grows, whatever its
// Content-Length announces, and refused as soon as it outgrows the budget
// (one with a length at once; one without once it ends, or with errTooLarge
// once it passes max, its later bytes read and thrown away);
// what a refused read reserved is given back with the reservation, and a
// budget with nothing reserved grants any body.
func TestReadBodyBudget(t *testing.T) {
	const max = 1 << 20
	b := newBudget(200 << 10)
	other := b.Reserve("other", time.Time{})
	if !other.Grow(100 << 10) {
		t.Fatal("first reservation refused")
	}
	tests := []struct {
		name    string
		size    int
		cl      int64
		wantErr error
		maxRead int // bytes read at most
	}{
		{"fits", 50 << 10, 50 << 10, nil, 50 << 10},
		{"announced too large", 150 << 10, 150 << 10, errBudget, 64 << 10},
		{"chunked, outgrows", 150 << 10, -1, errBudget, 150 << 10},
		{"chunked, outgrows, over max", 10 * max, -1, errTooLarge, max + 64<<10},
		{"chunked, fits", 30 << 10, -1, nil, 30 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := &countingReader{r: bytes.NewReader(make([]byte, tt.size))}
			res := b.Reserve("", time.Time{})
			got, err := readBody(rd, tt.cl, max, io.Discard, &res, nil)
			if err != tt.wantErr {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && len(got) != tt.size {
				t.Errorf("read %d bytes, want %d", len(got), tt.size)
			}
			if rd.n > tt.maxRead {
				t.Errorf("read %d bytes before answering, want at most %d", rd.n, tt.maxRead)
			}
			res.Release()
			if used := b.Used(); used != 100<<10 {
				t.Errorf("budget holds %d bytes after release, want the other request's %d", used, 100<<10)
			}
		})
	}
	other.Release()
	// Alone, a body larger than the whole budget is granted.
	res := b.Reserve("", time.Time{})
	if got, err := readBody(bytes.NewReader(make([]byte, 300<<10)), 300<<10, max, io.Discard, &res, nil); err != nil || len(got) != 300<<10 {
		t.Fatalf("a body alone over the budget: %d bytes, %v", len(got), err)
	}
	res.Release()
}

func TestReadBody(t *testing.T) {
	const max = 1000
	tests := []struct {
		name          string
		body          io.Reader
		contentLength int64
		wantLen       int
		wantErr       bool
		wantCap       int // checked when > 0: the buffer was presized (a byte over the length, for the end), not grown
	}{
		{"known length", strings.NewReader(strings.Repeat("a", 700)), 700, 700, false, 701},
		{"unknown length", strings.NewReader(strings.Repeat("a", 700)), -1, 700, false, 0},
		{"at the limit", strings.NewReader(strings.Repeat("a", max)), -1, max, false, 0},
		{"over the limit", strings.NewReader(strings.Repeat("a", max+1)), -1, 0, true, 0},
		{"far over the limit", strings.NewReader(strings.Repeat("a", 10*max)), -1, 0, true, 0},
		{"longer than announced", strings.NewReader(strings.Repeat("a", 800)), 700, 800, false, 0},
		{"longer than announced, over the limit", strings.NewReader(strings.Repeat("a", max+5)), 700, 0, true, 0},
		{"shorter than announced", strings.NewReader(strings.Repeat("a", 600)), 700, 600, false, 701},
		{"empty", strings.NewReader(""), 0, 0, false, 0},
		{"read error", &errReader{n: 100}, -1, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h bytes.Buffer // stands in for the digest: must see exactly the body
			got, err := readBody(tt.body, tt.contentLength, max, &h, nil, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if len(got) != tt.wantLen || !bytes.Equal(h.Bytes(), got) {
				t.Errorf("read %d bytes (hashed %d), want %d", len(got), h.Len(), tt.wantLen)
			}
			if tt.wantCap > 0 && cap(got) != tt.wantCap {
				t.Errorf("cap %d, want %d", cap(got), tt.wantCap)
			}
		})
	}
	// A body of the announced length costs one allocation: the read that
	// finds its end has the spare byte.
	body := strings.Repeat("a", 700)
	rd := strings.NewReader(body)
	if n := testing.AllocsPerRun(100, func() {
		rd.Reset(body)
		if got, err := readBody(rd, int64(len(body)), max, io.Discard, nil, nil); err != nil || len(got) != len(body) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	}); n != 1 {
		t.Errorf("%v allocations to read a body of the announced length, want 1", n)
	}
	// Reading stops at the limit plus one byte.
	counting := &countingReader{r: strings.NewReader(strings.Repeat("a", 100*max))}
	if _, err := readBody(counting, -1, max, io.Discard, nil, nil); !errors.Is(err, errTooLarge) {
		t.Fatal(err)
	}
	if counting.n != max+1 {
		t.Errorf("read %d bytes of an oversized body, want %d", counting.n, max+1)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// deadlines records the read deadlines a pacer sets.
type deadlines []time.Time

func (d *deadlines) SetReadDeadline(t time.Time) error {
	*d = append(*d, t)
	return nil
}

// TestPacerDeadlines counts the read deadlines set while a body is read: one
// per window, and one to lift the last. A body read to its announced length
// starts no window after its last byte.
func TestPacerDeadlines(t *testing.T) {
	tests := []struct {
		name          string
		size          int
		contentLength int64
		minRate       int64 // bytes per second over a 10 s window
		want          int   // deadlines set, the lifting one included
	}{
		{"whole body in one window", 700, 700, 1000, 2},
		{"no length, one window", 700, -1, 1000, 2},
		{"the window's bytes met twice before the end", 2500, 2500, 100, 4},
		{"the window's bytes met with the last byte", 2000, 2000, 100, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set deadlines
			p := &pacer{conn: &set, min: tt.minRate, window: 10 * time.Second}
			before := time.Now()
			body := strings.Repeat("a", tt.size)
			got, err := readBody(iotest.OneByteReader(strings.NewReader(body)), tt.contentLength, 1<<20, io.Discard, nil, p)
			if err != nil || len(got) != tt.size {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
			if len(set) != tt.want {
				t.Fatalf("%d deadlines set (%v), want %d", len(set), set, tt.want)
			}
			if first := set[0].Sub(before); first < 10*time.Second || first > 11*time.Second {
				t.Errorf("first deadline %v after the read began, want the window, 10s", first)
			}
			if !set[len(set)-1].IsZero() {
				t.Errorf("last deadline %v, want it lifted", set[len(set)-1])
			}
		})
	}
}
