package payloads_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
)

// BenchmarkDecodeCorpus is typed decoding of every corpus delivery (Parse, as a
// typed handler does it); ns/delivery is the mean over the corpus.
func BenchmarkDecodeCorpus(b *testing.B) {
	all := corpus.All()
	var size int64
	for _, ex := range all {
		size += int64(len(ex.Body))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, ex := range all {
			if _, err := payloads.Parse(ex.Event, ex.Body); err != nil {
				b.Fatal(err)
			}
		}
	}
	perDelivery(b, len(all))
}

// BenchmarkEncodeCorpus is MarshalJSON of every decoded corpus delivery.
func BenchmarkEncodeCorpus(b *testing.B) {
	all := corpus.All()
	decoded := make([]payloads.Payload, len(all))
	for i, ex := range all {
		p, err := payloads.Parse(ex.Event, ex.Body)
		if err != nil {
			b.Fatal(err)
		}
		decoded[i] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range decoded {
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	}
	perDelivery(b, len(all))
}

// BenchmarkDecodeCorpusGenericJSON is a reference point: encoding/json decoding
// the same deliveries into map[string]any (untyped, so not the same work).
func BenchmarkDecodeCorpusGenericJSON(b *testing.B) {
	all := corpus.All()
	b.ReportAllocs()
	for b.Loop() {
		for _, ex := range all {
			var v map[string]any
			if err := json.Unmarshal(ex.Body, &v); err != nil {
				b.Fatal(err)
			}
		}
	}
	perDelivery(b, len(all))
}

func perDelivery(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delivery")
}

// BenchmarkDecodeCorpusEncodingJSON is the baseline of typed decoding: encoding/json
// decoding the same deliveries into structs of the same fields and tags, built by
// reflection from the generated ones (timestamps and unions as json.RawMessage, no
// unknown members kept). The ratio to BenchmarkDecodeCorpus is the speed-up of the
// generated decoder.
func BenchmarkDecodeCorpusEncodingJSON(b *testing.B) {
	all := corpus.All()
	types := make([]reflect.Type, len(all))
	m := mirrors{}
	for i, ex := range all {
		p, err := payloads.Parse(ex.Event, ex.Body)
		if err != nil {
			b.Fatal(err)
		}
		types[i] = m.of(reflect.TypeOf(p).Elem())
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, ex := range all {
			if err := json.Unmarshal(ex.Body, reflect.New(types[i]).Interface()); err != nil {
				b.Fatal(err)
			}
		}
	}
	perDelivery(b, len(all))
}

// mirrors builds, per generated type, a plain struct type that encoding/json
// decodes by reflection alone.
type mirrors map[reflect.Type]reflect.Type

var rawType = reflect.TypeFor[json.RawMessage]()

func (m mirrors) of(t reflect.Type) reflect.Type {
	if mt, ok := m[t]; ok {
		if mt == nil { // a recursive type: cut the cycle
			return rawType
		}
		return mt
	}
	switch t.Kind() {
	case reflect.Pointer:
		return reflect.PointerTo(m.of(t.Elem()))
	case reflect.Slice:
		if t == rawType {
			return t
		}
		return reflect.SliceOf(m.of(t.Elem()))
	case reflect.Map:
		return reflect.MapOf(t.Key(), m.of(t.Elem()))
	case reflect.Struct:
		if _, ok := reflect.PointerTo(t).MethodByName("UnmarshalJSON"); !ok {
			return t
		}
		if _, generated := t.FieldByName("extra"); !generated {
			return rawType // Timestamp, unions
		}
		m[t] = nil
		var fields []reflect.StructField
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: m.of(f.Type), Tag: f.Tag})
		}
		mt := reflect.StructOf(fields)
		m[t] = mt
		return mt
	case reflect.String:
		return reflect.TypeFor[string]()
	case reflect.Int64:
		return reflect.TypeFor[int64]()
	}
	return t
}
