package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"forgehooks.dev/forgehooks/payloads"
)

// TestDecodeIdenticalToEncodingJSON decodes every corpus payload with the
// generated decoder (payloads.Parse) and with encoding/json into the mirror of
// the same struct (the baseline of BenchmarkDecode), and requires the same
// values, compared with go-cmp field by field. Raw fields (timestamps, unions,
// recursive types cut by the mirror) are compared as JSON values.
func TestDecodeIdenticalToEncodingJSON(t *testing.T) {
	all, err := LoadCorpus(CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	m := Mirrors{}
	sameJSON := cmp.Comparer(func(a, b json.RawMessage) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		// As JSON values: member order and spacing do not count, nor does a
		// member that is null on one side and absent on the other (the
		// generated encoder leaves out a nil optional member, as the README
		// says), since the bytes are the generated value re-encoded.
		var va, vb any
		da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
		da.UseNumber()
		db.UseNumber()
		return da.Decode(&va) == nil && db.Decode(&vb) == nil && reflect.DeepEqual(dropNulls(va), dropNulls(vb))
	})
	for _, d := range all {
		p, err := payloads.Parse(d.Event, d.Body)
		if err != nil {
			t.Errorf("%s: Parse: %v", d.Path, err)
			continue
		}
		v := reflect.ValueOf(p).Elem()
		mt := m.Of(v.Type())
		want := reflect.New(mt)
		if err := json.Unmarshal(d.Body, want.Interface()); err != nil {
			t.Errorf("%s: encoding/json into %s's mirror: %v", d.Path, v.Type(), err)
			continue
		}
		got, err := ToMirror(v, mt)
		if err != nil {
			t.Errorf("%s: %v", d.Path, err)
			continue
		}
		if diff := cmp.Diff(want.Elem().Interface(), got.Interface(), sameJSON); diff != "" {
			if len(diff) > 4000 {
				diff = diff[len(diff)-4000:]
			}
			t.Errorf("%s (%s): generated decoder and encoding/json differ (-encoding/json +generated), end of diff:\n%s", d.Path, v.Type(), diff)
		}
	}
	t.Logf("%d payloads compared", len(all))
}

// dropNulls removes, recursively, the object members whose value is null.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}
