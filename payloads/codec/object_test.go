package payloads

import (
	"math/rand/v2"
	"testing"
)

// TestSetAbsentMatchesBitByBit checks the word-at-a-time SetAbsent against its
// definition, bit i of absent set for each value field i < n not seen, for
// structs of up to two words of value fields (SeenSet's size).
func TestSetAbsentMatchesBitByBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= len(SeenSet{})*64; n++ {
		words := (n + 63) / 64
		for k := 0; k < 20; k++ {
			var seen SeenSet
			for i := 0; i < n; i++ {
				// Mostly seen, as in real payloads; sometimes every field.
				if k == 0 || rng.IntN(8) != 0 {
					seen[i/64] |= 1 << (i % 64)
				}
			}
			var want []uint64
			for i := 0; i < n; i++ {
				if seen[i/64]&(1<<(i%64)) == 0 {
					if want == nil {
						want = make([]uint64, words)
					}
					want[i/64] |= 1 << (i % 64)
				}
			}
			var x Extra
			SetAbsent(&x, &seen, n)
			if len(x.absent) != len(want) {
				t.Fatalf("n=%d seen=%x: absent %x, want %x", n, seen, x.absent, want)
			}
			for i := range want {
				if x.absent[i] != want[i] {
					t.Fatalf("n=%d seen=%x: absent %x, want %x", n, seen, x.absent, want)
				}
			}
		}
	}
}
