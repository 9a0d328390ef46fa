package payloads

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"forgehooks.dev/forgehooks/internal/corpus"
	codec "forgehooks.dev/forgehooks/payloads/codec"
)

// TestOwnedCorpus: over every example payload, a parse of codec.Owned bytes
// gives what Parse gives (deeply equal values, the same JSON out), and its
// strings point into those bytes, while Parse's point into no byte of the
// body it was given: Parse's caller may reuse its buffer, Owned's may not.
func TestOwnedCorpus(t *testing.T) {
	shared, own := 0, 0
	for _, ex := range corpus.All() {
		want, werr := Parse(ex.Event, ex.Body)
		body := bytes.Clone(ex.Body)
		got, gerr := parse(ex.Event, codec.Owned(body))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: Parse error %v, Owned error %v", ex.Path, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Owned decodes to %#v, Parse to %#v", ex.Path, got, want)
		}
		wb, err := want.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		gb, err := got.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gb, wb) {
			t.Fatalf("%s: Owned encodes to\n%s\nParse to\n%s", ex.Path, gb, wb)
		}
		in, out := stringsInto(reflect.ValueOf(got), body)
		shared += in
		own += out
		if in, _ := stringsInto(reflect.ValueOf(want), ex.Body); in > 0 {
			t.Errorf("%s: %d strings of Parse's payload point into the caller's bytes", ex.Path, in)
		}
	}
	// The strings of an Owned payload that are their own: those with
	// escapes, and enum values (constants).
	if shared < 20*own {
		t.Errorf("Owned payloads: %d strings share the input, %d do not; want nearly all to share", shared, own)
	}
	t.Logf("Owned payloads: %d strings share the input, %d do not", shared, own)
}

// TestOwnedBounds: an empty or oversized input is read as Bytes reads it,
// so that a string kept from a huge payload does not keep all of it.
func TestOwnedBounds(t *testing.T) {
	big := []byte(`{"ref":"refs/heads/main","pad":"` + strings.Repeat("x", 300<<10) + `"}`)
	p, err := parse("push", codec.Owned(big))
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := stringsInto(reflect.ValueOf(p), big); in != 0 {
		t.Errorf("a %d-byte Owned payload shares its bytes with %d strings", len(big), in)
	}
	if _, err := parse("push", codec.Owned(nil)); err == nil {
		t.Error("an empty Owned payload decoded")
	}
	small := []byte(`{"ref":"refs/heads/main"}`)
	p, err = parse("push", codec.Owned(small))
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := stringsInto(reflect.ValueOf(p), small); in != 1 {
		t.Errorf("a small Owned payload shares its bytes with %d strings, want 1", in)
	}
}

// stringsInto counts the non-empty strings reachable from v whose bytes lie
// inside b, and those outside it.
func stringsInto(v reflect.Value, b []byte) (in, out int) {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	seen := map[uintptr]bool{}
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			s := v.String()
			if s == "" {
				return
			}
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
				in++
			} else {
				out++
			}
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Pointer {
				if seen[v.Pointer()] {
					return
				}
				seen[v.Pointer()] = true
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				walk(it.Key())
				walk(it.Value())
			}
		}
	}
	walk(v)
	return in, out
}
