package payloads_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/mirror"
	"forgehooks.dev/forgehooks/payloads"
)

// TestDecodeIdenticalToEncodingJSON decodes every corpus payload with the
// generated decoder (Parse) and with encoding/json into the mirror of the same
// struct (internal/mirror: the baseline of the decoding benchmarks), and
// requires the same values, compared with go-cmp field by field. Fields the
// mirror holds as json.RawMessage (timestamps, unions, recursive types) are
// compared as JSON values.
func TestDecodeIdenticalToEncodingJSON(t *testing.T) {
	m := mirror.Mirrors{}
	sameJSON := cmp.Comparer(func(a, b json.RawMessage) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		// As JSON values: member order and spacing do not count, nor does a
		// member that is null on one side and absent on the other (the
		// generated encoder leaves out a nil optional member, as the README
		// says), since one side is the generated value re-encoded.
		var va, vb any
		da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
		da.UseNumber()
		db.UseNumber()
		return da.Decode(&va) == nil && db.Decode(&vb) == nil && reflect.DeepEqual(dropNulls(va), dropNulls(vb))
	})
	all := corpus.All()
	for _, ex := range all {
		p, err := payloads.Parse(ex.Event, ex.Body)
		if err != nil {
			t.Errorf("%s: Parse: %v", ex.Path, err)
			continue
		}
		v := reflect.ValueOf(p).Elem()
		mt := m.Of(v.Type())
		want := reflect.New(mt)
		if err := json.Unmarshal(ex.Body, want.Interface()); err != nil {
			t.Errorf("%s: encoding/json into %s's mirror: %v", ex.Path, v.Type(), err)
			continue
		}
		got, err := mirror.ToMirror(v, mt)
		if err != nil {
			t.Errorf("%s: %v", ex.Path, err)
			continue
		}
		if diff := cmp.Diff(want.Elem().Interface(), got.Interface(), sameJSON); diff != "" {
			if len(diff) > 4000 {
				diff = diff[len(diff)-4000:]
			}
			t.Errorf("%s (%s): the generated decoder and encoding/json differ (-encoding/json +generated), end of diff:\n%s", ex.Path, v.Type(), diff)
		}
	}
	if len(all) < 300 {
		t.Errorf("only %d payloads compared", len(all))
	}
}
