package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/internal/mirror"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// corpus is loaded once per test binary: every payload, and those every peer
// accepts (the set BenchmarkDelivery compares on).
var corpus = sync.OnceValues(func() ([2][]Delivery, error) {
	all, err := LoadCorpus(CorpusDir)
	if err != nil {
		return [2][]Delivery{}, err
	}
	common, _, err := Common(all)
	return [2][]Delivery{all, common}, err
})

// loadCorpus returns every payload (common false) or those every peer accepts.
func loadCorpus(b *testing.B, common bool) []Delivery {
	c, err := corpus()
	if err != nil {
		b.Fatal(err)
	}
	if common {
		return c[1]
	}
	return c[0]
}

// each runs fn over the deliveries, one per iteration, cycling: ns/op and
// allocs/op are per delivery, averaged over the corpus.
func each(b *testing.B, all []Delivery, fn func(d *Delivery) error) {
	b.ReportAllocs()
	var size int64
	for _, d := range all {
		size += int64(len(d.Body))
	}
	b.SetBytes(size / int64(len(all)))
	i := 0
	for b.Loop() {
		d := &all[i]
		if err := fn(d); err != nil {
			b.Fatalf("%s: %v", d.Path, err)
		}
		if i++; i == len(all) {
			i = 0
		}
	}
}

// hmacVerify is the floor: crypto/hmac over the body and a constant-time
// compare with the signature's digest, decoded without allocating.
func hmacVerify(d *Delivery) error {
	var want [sha256.Size]byte
	if _, err := hex.Decode(want[:], []byte(d.Signature[len("sha256="):])); err != nil {
		return err
	}
	mac := hmac.New(sha256.New, []byte(Secret))
	mac.Write(d.Body)
	var sum [sha256.Size]byte
	if !hmac.Equal(mac.Sum(sum[:0]), want[:]) {
		return errMismatch
	}
	return nil
}

var errMismatch = io.ErrUnexpectedEOF // any error: the benchmarks sign correctly

// BenchmarkDelivery is the cost of receiving one delivery, averaged over the
// corpus, for the floors, forgehooks and its peers, on the same signed bodies.
// Every implementation verifies the signature (except the decode-only rows),
// and every one must accept every delivery.
func BenchmarkDelivery(b *testing.B) {
	all := loadCorpus(b, true)
	ctx := context.Background()

	// floor: what every receiver pays.
	b.Run("impl=floor-hmac", func(b *testing.B) { each(b, all, hmacVerify) })
	b.Run("impl=floor-hmac+scan", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			if err := hmacVerify(d); err != nil {
				return err
			}
			_, err := jsonscan.Scan(d.Body)
			return err
		})
	})
	// The step raw receive adds to the HMAC: validating the JSON and finding
	// its action, alone. Raw receive is the HMAC plus this plus routing, so a
	// change in raw ÷ HMAC that this row does not show is in the routing.
	b.Run("impl=scan", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			_, err := jsonscan.Scan(d.Body)
			return err
		})
	})
	b.Run("impl=floor-json.Valid", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			if !json.Valid(d.Body) {
				return errMismatch
			}
			return nil
		})
	})

	// forgehooks: verify, validate, route by name.action to one raw handler.
	raw := newRaw(b)
	b.Run("impl=forgehooks-raw", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			return raw.VerifyAndReceive(ctx, webhooks.Delivery{ID: "1", Name: d.Event, Payload: d.Body, Signature: d.Signature})
		})
	})
	// forgehooks: the same, to a handler that decodes the typed payload.
	typed := newWebhooks(b)
	typed.OnAny(func(ctx context.Context, e emitter.Event) error {
		_, err := payloads.Parse(e.Name, e.Payload)
		return err
	})
	b.Run("impl=forgehooks-typed", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			return typed.VerifyAndReceive(ctx, webhooks.Delivery{ID: "1", Name: d.Event, Payload: d.Body, Signature: d.Signature})
		})
	})

	// go-github: the documented way, ValidatePayloadFromBody then ParseWebHook.
	b.Run("impl=go-github", func(b *testing.B) {
		rd := bytes.NewReader(nil)
		each(b, all, func(d *Delivery) error {
			_, err := GoGitHub(d, rd)
			return err
		})
	})
	// go-playground/webhooks: Parse takes the request and reads its body.
	pg, err := NewPlayground()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=go-playground", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			_, err := pg.Parse(d)
			return err
		})
	})
}

// BenchmarkDecode is typed decoding alone (no signature): payloads.Parse against
// encoding/json into the mirrors of the same structs (internal/mirror), whose types
// are looked up before the clock starts, so the baseline does not pay for
// finding the action while forgehooks does.
func BenchmarkDecode(b *testing.B) {
	all := loadCorpus(b, false)
	b.Run("impl=forgehooks", func(b *testing.B) {
		each(b, all, func(d *Delivery) error {
			_, err := payloads.Parse(d.Event, d.Body)
			return err
		})
	})
	types := mirrorTypes(b, all)
	b.Run("impl=encoding-json", func(b *testing.B) {
		i := 0
		each(b, all, func(d *Delivery) error {
			// each cycles in the same order, so i follows d.
			err := json.Unmarshal(d.Body, reflect.New(types[i]).Interface())
			if i++; i == len(all) {
				i = 0
			}
			return err
		})
	})
}

func mirrorTypes(b *testing.B, all []Delivery) []reflect.Type {
	m := mirror.Mirrors{}
	types := make([]reflect.Type, len(all))
	for i, d := range all {
		p, err := payloads.Parse(d.Event, d.Body)
		if err != nil {
			b.Fatal(err)
		}
		types[i] = m.Of(reflect.TypeOf(p).Elem())
	}
	return types
}

func newWebhooks(b *testing.B) *webhooks.Webhooks {
	wh, err := webhooks.New(webhooks.Options{Secret: Secret, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return wh
}

// newRaw returns a Webhooks with one raw handler per name of the names tuple
// that a delivery is routed to: every event.action, and every event without
// actions, so that each delivery runs exactly one handler, found by its
// name.action when it has one.
func newRaw(b *testing.B) *webhooks.Webhooks {
	wh := newWebhooks(b)
	names := payloads.EmitterEventNames()
	hasActions := map[string]bool{}
	for _, n := range names {
		if ev, _, ok := cutDot(n); ok {
			hasActions[ev] = true
		}
	}
	var reg []string
	for _, n := range names {
		if _, _, ok := cutDot(n); ok || !hasActions[n] {
			reg = append(reg, n)
		}
	}
	wh.OnNames(reg, func(context.Context, emitter.Event) error { return nil })
	return wh
}

func cutDot(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// TestCommon reports which corpus payloads the peers reject, so that the set
// BenchmarkDelivery uses is known.
func TestCommon(t *testing.T) {
	all, err := LoadCorpus(CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	common, rejected, err := Common(all)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d payloads accepted by every peer; rejected by one: %v", len(common), len(all), rejected)
	if len(common) < len(all)/2 {
		t.Errorf("only %d of %d payloads in common", len(common), len(all))
	}
}
