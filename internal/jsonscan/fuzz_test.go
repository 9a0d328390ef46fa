package jsonscan

import (
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// FuzzScan checks that Scan agrees with encoding/json on every input: the same
// acceptance as json.Valid for a top-level object, and the same "action" as
// decoding into a map[string]json.RawMessage and then a string.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"action":"opened"}`, `{"action":"a","action":"b"}`, `{"\u0061ction":"x"}`,
		`{"action":"\ud83d\ude00\ud800"}`, "{\"action\":\"\xff\xed\xa0\x80\"}", `{"action":5}`,
		`[{"action":"x"}]`, `{"a":{"action":"x"}}`, `{"a":-1.5e+3,"b":[true,false,null]}`,
		`{"a":"\u12"}`, `{"a":01}`, ` {"action" : "x" } `, `{"action":"x"}{}`, `nul`, ``,
	} {
		f.Add([]byte(s))
	}
	for i, ex := range corpus.All() {
		if i%10 == 0 {
			f.Add(ex.Body)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
	})
}
