package relay

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseMessage checks that any data either parses or fails with
// ErrBadMessage, never panics, and that a body taken from bodyB is exactly what
// bodyB encodes.
func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"x-forge-event":"ping","body":{"zen":"<&>"},"bodyB":"eyJ6ZW4iOiI8Jj4ifQ==","query":{"a":["1"]},"timestamp":1}`))
	f.Add([]byte(`{"rawBody":"a\u0000b","body":null}`))
	f.Add([]byte(`{"body":  [1 , 2] }`))
	f.Add([]byte(`{"bodyB":"e30"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMessage(data)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("error %v is not ErrBadMessage", err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			t.Fatalf("parsed data that is not a JSON object: %q", data)
		}
		if m.BodySource == "bodyB" {
			var s string
			json.Unmarshal(obj["bodyB"], &s)
			if base64.StdEncoding.EncodeToString(m.Body) != s {
				t.Fatalf("body %q does not re-encode to bodyB %q", m.Body, s)
			}
		}
		for name, vs := range m.Header {
			if len(vs) != 1 || !validHeaderName(name) || !validHeaderValue(vs[0]) {
				t.Fatalf("header %q: %q", name, vs)
			}
		}
	})
}
