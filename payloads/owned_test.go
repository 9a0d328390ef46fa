package payloads

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/jsonscan"
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

// BenchmarkPushBeside is the load run's payload (the corpus median push,
// 7,124 bytes) read each way a receiver reads it, in one run: the HMAC every
// receiver computes, the raw receiver's validating scan, and the typed
// decode from a caller's bytes (Parse: its strings share one copy of them)
// and from bytes handed over (codec.Owned, the middleware's: no copy).
func BenchmarkPushBeside(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
	rows := []struct {
		name string
		read func() error
	}{
		{"read=hmac", func() error {
			m := hmac.New(sha256.New, []byte("forgehooks-bench-secret"))
			m.Write(body)
			var sum [sha256.Size]byte
			m.Sum(sum[:0])
			return nil
		}},
		{"read=scan", func() error { _, err := jsonscan.Scan(body); return err }},
		{"read=decode-bytes", func() error { _, err := parse("push", codec.Bytes(body)); return err }},
		{"read=decode-owned", func() error { _, err := parse("push", codec.Owned(body)); return err }},
	}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := row.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzOwned: on any name and body, a parse of codec.Owned bytes agrees with
// Parse (the same error or none, deeply equal values), and leaves the bytes
// as they were.
func FuzzOwned(f *testing.F) {
	for _, ex := range corpus.All() {
		if len(ex.Body) < 2500 {
			f.Add(ex.Event, ex.Body)
		}
	}
	f.Add("issues", []byte(`{"action":"opened","issue":{"title":"a\"b","id":1}}`))
	f.Add("push", []byte(`{"ref":"refs/heads/\u00e9","ref":"x"}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		want, werr := Parse(name, body)
		in := bytes.Clone(body)
		got, gerr := parse(name, codec.Owned(in))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("Parse(%q, %q): error %v; Owned: %v", name, body, werr, gerr)
		}
		if !bytes.Equal(in, body) {
			t.Fatalf("parsing Owned bytes changed them: %q, was %q", in, body)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%q, %q) = %#v; Owned: %#v", name, body, want, got)
		}
	})
}
