package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestMasksLowestFlagIsExact checks StopMask and PlainMask against their
// definitions: in a word whose bytes below position p need no stop, the lowest
// flag is at p exactly when byte p is a quote, a backslash or a control byte
// (and for StopMask, 0x80 and above), whatever the bytes above p are.
func TestMasksLowestFlagIsExact(t *testing.T) {
	plain := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for _, tc := range []struct {
		name string
		mask func(uint64) uint64
		stop func(byte) bool
	}{
		{"StopMask", StopMask, func(c byte) bool { return plain(c) || c >= 0x80 }},
		{"PlainMask", PlainMask, plain},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		for p := 0; p < 8; p++ {
			for v := 0; v < 256; v++ {
				for n := 0; n < 64; n++ {
					var w [8]byte
					for i := range w {
						switch {
						case i < p:
							for w[i] = byte(rng.IntN(256)); tc.stop(w[i]); w[i] = byte(rng.IntN(256)) {
							}
						case i == p:
							w[i] = byte(v)
						default:
							w[i] = byte(rng.IntN(256))
						}
					}
					m := tc.mask(binary.LittleEndian.Uint64(w[:]))
					got := 8
					if m != 0 {
						got = bits.TrailingZeros64(m) >> 3
					}
					if tc.stop(byte(v)) && got != p || !tc.stop(byte(v)) && got <= p {
						t.Fatalf("%s(% x): lowest flag at byte %d; byte %d is %#x", tc.name, w, got, p, v)
					}
				}
			}
		}
	}
}
