package jsonscan

import (
	"slices"
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

// FuzzLookup checks that Lookup agrees with encoding/json on every input and
// path: the same acceptance as Scan, and each path's string as decoding into
// maps of json.RawMessage and then a string gives.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"sender":{"login":"u"}}`, `{"sender":{"login":"a","login":"b"}}`,
		`{"sender":{"login":"a"},"sender":{"id":1}}`, `{"s\u0065nder":{"\u006cogin":"\ud83d\ude00\ud800"}}`,
		"{\"sender\":{\"login\":\"\xff\xed\xa0\x80\"}}", `{"sender":{"login":5}}`, `{"sender":null}`,
		`[{"sender":{"login":"u"}}]`, `{"x":{"sender":{"login":"u"}}}`, `{"sender":{"x":{"login":"u"}}}`,
		`{"sender":{"login":"\u12"}}`, `{"a":01}`, ` {"sender" : {"login" : "u" } } `, `nul`, ``,
	} {
		f.Add([]byte(s), "sender", "login")
	}
	f.Add([]byte(`{"a":{"\"":"x","é":"y"}}`), "a", `"`)
	f.Add([]byte(`{"a":{"\ufffd":"x"}}`), "a", "\ufffd")
	for i, ex := range corpus.All() {
		if i%10 == 0 {
			f.Add(ex.Body, "repository", "full_name")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, outer, inner string) {
		checkLookup(t, data, slices.Concat(logPaths, []Path{{outer, inner}, {outer, "login"}}))
	})
}
