package payloads

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStringFastPathAtEveryOffset puts each kind of byte that ends the
// eight-bytes-at-a-time scan (quote, escape, control byte, UTF-8 valid and not)
// at every offset of a string, and checks decString, key and skip against
// encoding/json, with string values shared from the document and not.
func TestStringFastPathAtEveryOffset(t *testing.T) {
	specials := []string{`\"`, `\\`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, "é", "😀", "\xff", "\xed\xa0\x80", "\xc3", "\x01", "\x7f", "~"}
	for _, sp := range specials {
		for off := 0; off <= 17; off++ {
			for _, tail := range []int{0, 1, 7, 8, 9} {
				in := `"` + strings.Repeat("a", off) + sp + strings.Repeat("b", tail) + `"`
				var want string
				wantErr := json.Unmarshal([]byte(in), &want)
				for _, shared := range []bool{true, false} {
					doc := in
					if !shared {
						doc += strings.Repeat(" ", maxShared) // too long to share
					}
					d := decoder{buf: []byte(doc)}
					var got string
					err := decString(&got, &d)
					if (err != nil) != (wantErr != nil) {
						t.Fatalf("decString(%q): error %v, encoding/json %v", in, err, wantErr)
					}
					if err == nil && got != want {
						t.Errorf("decString(%q) = %q, encoding/json %q", in, got, want)
					}
				}
				if got, want := decodeValid([]byte(in)), json.Valid([]byte(in)); got != want {
					t.Errorf("skip(%q) valid = %v, encoding/json %v", in, got, want)
				}
				obj := `{` + in + `:1}`
				var m map[string]int
				if err := json.Unmarshal([]byte(obj), &m); err == nil {
					d := decoder{buf: []byte(obj)}
					err := d.object(func(k []byte) error {
						if _, ok := m[string(k)]; !ok {
							t.Errorf("key of %q = %q, encoding/json has %v", obj, k, m)
						}
						return d.skip()
					})
					if err != nil {
						t.Errorf("object(%q): %v", obj, err)
					}
				}
			}
		}
	}
}

// TestLargeDocumentStringsAreOwnCopies: past maxShared, string values do not
// share one copy of the document, so that keeping one does not keep it all.
func TestLargeDocumentStringsAreOwnCopies(t *testing.T) {
	in := `"abc"` + strings.Repeat(" ", maxShared)
	d := decoder{buf: []byte(in)}
	var s string
	if err := decString(&s, &d); err != nil || s != "abc" {
		t.Fatalf("decString = %q, %v", s, err)
	}
	if d.src != "" {
		t.Errorf("a %d-byte document was copied for sharing", len(in))
	}
}

// TestMasksLowestFlagIsExact checks stopMask and plainMask against their
// definitions: in a word whose bytes below position p need no stop, the lowest
// flag is at p exactly when byte p is a quote, a backslash or a control byte
// (and for stopMask, 0x80 and above), whatever the bytes above p are.
func TestMasksLowestFlagIsExact(t *testing.T) {
	plain := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for _, tc := range []struct {
		name string
		mask func(uint64) uint64
		stop func(byte) bool
	}{
		{"stopMask", stopMask, func(c byte) bool { return plain(c) || c >= 0x80 }},
		{"plainMask", plainMask, plain},
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
