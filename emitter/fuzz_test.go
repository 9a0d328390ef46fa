package emitter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// FuzzAction checks that Event.Action, outside Receive and inside it, agrees
// with encoding/json (decode into map[string]json.RawMessage, then "action" into
// a string), and that Receive accepts exactly the payloads that are JSON objects.
func FuzzAction(f *testing.F) {
	for _, s := range []string{
		`{"action":"opened"}`, `{"action":"a","action":"b"}`, `{"\u0061ction":"x"}`, `{"action":1}`,
		`{"x":{"action":"nested"}}`, "{\"action\":\"\xff\"}", `{"action":"\ud800"}`, `[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	for i, ex := range corpus.All() {
		if i%20 == 0 {
			f.Add(ex.Body)
		}
	}
	em := New(Options{})
	var inside string
	em.OnAny(func(ctx context.Context, e Event) error { inside = e.Action(); return nil })
	f.Fuzz(func(t *testing.T, payload []byte) {
		var want string
		object := json.Valid(payload) && bytes.TrimLeft(payload, " \t\r\n")[0] == '{'
		if object {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(payload, &m); err != nil {
				t.Fatalf("valid object does not decode: %v", err)
			}
			if json.Unmarshal(m["action"], &want) != nil {
				want = ""
			}
		}
		if got := (Event{Name: "x", Payload: payload}).Action(); got != want {
			t.Fatalf("Action(%q) = %q, encoding/json %q", payload, got, want)
		}
		inside = ""
		err := em.Receive(context.Background(), Event{Name: "x", Payload: payload})
		if len(payload) == 0 {
			if !errors.Is(err, ErrMissingPayload) {
				t.Fatalf("empty payload: %v", err)
			}
			return
		}
		if (err == nil) != object || err != nil && !errors.Is(err, ErrInvalidPayload) {
			t.Fatalf("Receive(%q) = %v; object: %v", payload, err, object)
		}
		if inside != want {
			t.Fatalf("Action inside Receive(%q) = %q, encoding/json %q", payload, inside, want)
		}
	})
}
