package payloads

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEncodeStringAtEveryOffset puts each byte str must escape or check (and
// some it must not) at every offset of a string, and compares the output with
// encoding/json's.
func TestEncodeStringAtEveryOffset(t *testing.T) {
	specials := []string{`"`, `\`, "\n", "\x00", "\x1f", "<", ">", "&", "é", "😀", "\u2028", "\u2029", "\xff", "\xed\xa0\x80", "\xe2\x80", "~", "\x7f", "=", "?", "%"}
	for _, sp := range specials {
		for off := 0; off <= 17; off++ {
			for _, tail := range []int{0, 1, 7, 8, 9} {
				in := strings.Repeat("a", off) + sp + strings.Repeat("b", tail)
				want, err := json.Marshal(in)
				if err != nil {
					t.Fatal(err)
				}
				var e Encoder
				e.str(in)
				if string(e.buf) != string(want) {
					t.Errorf("str(%q) = %s, encoding/json %s", in, e.buf, want)
				}
			}
		}
	}
}
