package webhooks

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
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
			got, err := readBody(&shortReads{bytes.NewReader(body), rnd}, cl, max, &h)
			if err != nil {
				t.Fatalf("size %d, Content-Length %d: %v", size, cl, err)
			}
			if !bytes.Equal(got, body) || !bytes.Equal(h.Bytes(), body) {
				t.Fatalf("size %d, Content-Length %d: read %d bytes, hashed %d", size, cl, len(got), h.Len())
			}
		}
		if _, err := readBody(bytes.NewReader(append(body, make([]byte, max+1-size)...)), -1, max, io.Discard); err != errTooLarge {
			t.Fatalf("size %d padded past the limit: %v", size, err)
		}
	}
}

// TestReadBodyMemory: reading a large body allocates at most 1.5 times its
// size with a Content-Length and 2.5 times without, never the doubling growth
// of io.ReadAll.
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
	}{{"Content-Length", int64(size), 1.5}, {"chunked", -1, 2.5}} {
		t.Run(fmt.Sprintf("%s/%d", tt.name, size), func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := readBody(&shortReads{bytes.NewReader(body), rand.New(rand.NewPCG(3, 4))}, tt.cl, DefaultMaxBodyBytes, io.Discard)
			runtime.ReadMemStats(&after)
			if err != nil || len(got) != size {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
			alloc := float64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("allocated %.2f times the body", alloc/float64(size))
			if alloc > tt.bound*float64(size)+1<<20 {
				t.Errorf("allocated %.0f bytes for a %d-byte body: more than %.1f times", alloc, size, tt.bound)
			}
		})
	}
}
