package proxy

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/relay"
	"forgehooks.dev/forgehooks/internal/sse"
)

// FuzzMessageRoundTrip sends any body and header value through the proxy's
// message encoding, the event-stream format and the relay's parser, and checks
// that the relay gets the body byte for byte and the header unchanged; and that
// "body" is the body itself whenever it is JSON on one line, for clients that
// read only "body" (smee-client).
func FuzzMessageRoundTrip(f *testing.F) {
	f.Add([]byte(`{"zen":"<&>","n":1.50}`), "push")
	f.Add([]byte("{\n  \"pretty\": [1, 2]\r\n}\n"), "a, b")
	f.Add([]byte("payload=%7B%7D"), "")
	f.Add([]byte("\xff\xfe\x00\r"), "\u00e9")
	f.Add([]byte(""), "x")
	f.Fuzz(func(t *testing.T, body []byte, value string) {
		r := httptest.NewRequest("POST", "http://p.test/c", bytes.NewReader(body))
		r.Header.Set("X-Forge-Event", value)
		data := encodeMessage(r, body, time.UnixMilli(1))
		frame, err := sse.AppendFrame(nil, sse.Frame{ID: "e-1", Data: data})
		if err != nil {
			t.Fatalf("the message cannot be an event: %v", err)
		}
		ev, err := sse.NewReader(bytes.NewReader(frame), sse.Options{}).Next()
		if err != nil {
			t.Fatal(err)
		}
		m, err := relay.ParseMessage(ev.Data)
		if err != nil {
			t.Fatalf("ParseMessage: %v\n%s", err, ev.Data)
		}
		if !bytes.Equal(m.Body, body) || m.BodySource != "bodyB" {
			t.Fatalf("body %q from %s, want %q", m.Body, m.BodySource, body)
		}
		if m.OriginalLength != int64(len(body)) {
			t.Fatalf("original length %d, want %d", m.OriginalLength, len(body))
		}
		if got := m.Header.Get("X-Forge-Event"); validValue(value) && got != value {
			t.Fatalf("header %q, want %q", got, value)
		}
		var obj map[string]json.RawMessage
		json.Unmarshal(ev.Data, &obj)
		if json.Valid(body) && !bytes.ContainsAny(body, "\r\n") && len(bytes.TrimSpace(body)) > 0 && !bytes.Equal(obj["body"], body) {
			t.Fatalf("body member %q, want the body %q itself", obj["body"], body)
		}
	})
}

// validValue reports whether Go's http.Header would carry v unchanged, and JSON
// too (valid UTF-8).
func validValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f || c >= 0x80 {
			return false
		}
	}
	return v == "" || v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t'
}
