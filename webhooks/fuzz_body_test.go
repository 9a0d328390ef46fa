package webhooks

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzReadBody reads a body in random short reads under a random
// Content-Length (right, short, long or absent) and a random budget of which
// another request holds part: the result is the body exactly, and what was
// hashed; errTooLarge exactly past the limit; errBudget only when the budget
// cannot hold what the read needs; and releasing the reservation gives back
// every byte it took.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte(`{"action":"opened"}`), int64(19), int64(1<<20), int64(0), uint64(1))
	f.Add([]byte(`{}`), int64(-1), int64(10), int64(5), uint64(2))
	f.Add(bytes.Repeat([]byte("x"), 70000), int64(-1), int64(100000), int64(50000), uint64(3))
	f.Add(bytes.Repeat([]byte("y"), 3000), int64(100), int64(4000), int64(0), uint64(4))
	f.Fuzz(func(t *testing.T, body []byte, cl, budgetMax, othersHold int64, seed uint64) {
		const max = 200000
		if cl < -1 || cl > max || budgetMax <= 0 || othersHold < 0 || othersHold > budgetMax {
			return
		}
		b := newBudget(budgetMax)
		other := b.Reserve("other", time.Time{})
		if othersHold > 0 && !other.Grow(othersHold) {
			t.Fatal("first reservation refused")
		}
		res := b.Reserve("", time.Time{})
		var h bytes.Buffer
		rnd := rand.New(rand.NewPCG(seed, seed))
		got, err := readBody(&shortReads{bytes.NewReader(body), rnd}, cl, max, &h, &res, nil)
		switch {
		case err == errBudget:
			if othersHold == 0 {
				t.Fatalf("errBudget with nothing else reserved (budget %d)", budgetMax)
			}
		case len(body) > max:
			if err != errTooLarge {
				t.Fatalf("%d-byte body over the limit: %v", len(body), err)
			}
		case err != nil:
			t.Fatalf("%d-byte body, Content-Length %d: %v", len(body), cl, err)
		default:
			if !bytes.Equal(got, body) || !bytes.Equal(h.Bytes(), body) {
				t.Fatalf("read %d bytes (hashed %d) of a %d-byte body", len(got), h.Len(), len(body))
			}
			if res.Held() < int64(len(body)) {
				t.Fatalf("reserved %d bytes for a %d-byte body", res.Held(), len(body))
			}
		}
		res.Release()
		other.Release()
		if used := b.Used(); used != 0 {
			t.Fatalf("budget holds %d bytes after both released", used)
		}
	})
}
