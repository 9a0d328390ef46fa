package payloads

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStringFastPathAtEveryOffset puts each kind of byte that ends the
// eight-bytes-at-a-time scan (quote, escape, control byte, UTF-8 valid and not)
// at every offset of a string, and checks DecString, key and skip against
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
					d := Decoder{buf: []byte(doc)}
					var got string
					err := DecString(&got, &d)
					if (err != nil) != (wantErr != nil) {
						t.Fatalf("DecString(%q): error %v, encoding/json %v", in, err, wantErr)
					}
					if err == nil && got != want {
						t.Errorf("DecString(%q) = %q, encoding/json %q", in, got, want)
					}
				}
				if got, want := decodeValid([]byte(in)), json.Valid([]byte(in)); got != want {
					t.Errorf("skip(%q) valid = %v, encoding/json %v", in, got, want)
				}
				obj := `{` + in + `:1}`
				var m map[string]int
				if err := json.Unmarshal([]byte(obj), &m); err == nil {
					d := Decoder{buf: []byte(obj)}
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
	d := Decoder{buf: []byte(in)}
	var s string
	if err := DecString(&s, &d); err != nil || s != "abc" {
		t.Fatalf("DecString = %q, %v", s, err)
	}
	if d.src != "" {
		t.Errorf("a %d-byte document was copied for sharing", len(in))
	}
}
