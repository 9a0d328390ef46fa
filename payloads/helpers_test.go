package payloads_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// generic decodes a document with numbers kept as their text, so that an int64
// id or a float compares exactly.
func generic(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %.80s: %v", b, err)
	}
	return v
}

// dropNulls removes members whose value is null, at every depth: a member that
// is null may come back absent, or the other way round, and nothing else.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, m := range v {
			if m == nil {
				delete(v, k)
				continue
			}
			v[k] = dropNulls(m)
		}
	case []any:
		for i := range v {
			v[i] = dropNulls(v[i])
		}
	}
	return v
}

// numbersByValue compares JSON numbers by value (1.0 equals 1, 1e2 equals 100).
var numbersByValue = cmp.Comparer(func(a, b json.Number) bool {
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
})

// jsonDiff returns the difference between two documents under the round-trip
// rule: members that are null count as absent, numbers compare by value,
// everything else must be equal.
func jsonDiff(t testing.TB, want, got []byte) string {
	t.Helper()
	return cmp.Diff(dropNulls(generic(t, want)), dropNulls(generic(t, got)), numbersByValue)
}

func sameJSON(t testing.TB, got, want []byte) bool {
	t.Helper()
	if d := jsonDiff(t, want, got); d != "" {
		t.Errorf("documents differ (-want +got):\n%s", d)
		return false
	}
	return true
}
