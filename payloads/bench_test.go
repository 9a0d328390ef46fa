package payloads_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/mirror"
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
// reflection from the generated ones by internal/mirror (timestamps and unions as
// json.RawMessage, no unknown members kept). The ratio to BenchmarkDecodeCorpus
// is the speed-up of the generated decoder.
func BenchmarkDecodeCorpusEncodingJSON(b *testing.B) {
	all := corpus.All()
	types := make([]reflect.Type, len(all))
	m := mirror.Mirrors{}
	for i, ex := range all {
		p, err := payloads.Parse(ex.Event, ex.Body)
		if err != nil {
			b.Fatal(err)
		}
		types[i] = m.Of(reflect.TypeOf(p).Elem())
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

// BenchmarkDecodePush is the typed decode of the load run's payload, the corpus's
// median push (push-6.json, 7,124 bytes), as OnPushEvent's handlers get it: the
// difference between the typed and the raw receiver of bench/cmd/load.
func BenchmarkDecodePush(b *testing.B) {
	body := corpus.Body(corpus.MedianPush)
	if body == nil {
		b.Fatal(corpus.MedianPush, " is not in the corpus")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := payloads.Parse("push", body); err != nil {
			b.Fatal(err)
		}
	}
}
