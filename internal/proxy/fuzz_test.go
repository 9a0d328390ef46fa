package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
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
		if len(data) > 2*len(body)+(len(body)+2)/3*4+len(value)*6+512 {
			t.Fatalf("message of %d bytes for a body of %d: over twice the body and its base64", len(data), len(body))
		}
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
		// A JSON value inside the message cannot keep white space around it, so
		// the body member is the body without its leading and trailing JSON white
		// space; the exact bytes travel in bodyB (checked above).
		if trimmed := bytes.Trim(body, " \t\r\n"); json.Valid(body) && !bytes.ContainsAny(body, "\r\n") && len(trimmed) > 0 && !bytes.Equal(obj["body"], trimmed) {
			t.Fatalf("body member %q, want the body %q itself", obj["body"], trimmed)
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

// FuzzJournal loads any journal file: it either loads, or fails with
// ErrJournal, never panics; what it loads is in increasing seq order, and a
// second load of the file it rewrote gives the same buffer.
func FuzzJournal(f *testing.F) {
	f.Add("forgehooks-proxy-journal 1 EPOCH 0\n1 1 {\"a\":1}\n2 1 {}\n")
	f.Add("forgehooks-proxy-journal 1 EPOCH 7\n")
	f.Add("forgehooks-proxy-journal 1 EPOCH 3\n1 1 x\n2 1 {\"cut")
	f.Add("forgehooks-proxy-journal 1 E-P 0\n")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "ch.journal")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		load := func() (*channel, error) {
			ld := &loader{now: time.UnixMilli(0), lim: limits{events: 1 << 20, bytes: 1 << 40, age: 1 << 62},
				maxRecord: 1 << 20, maxBuffered: 1 << 40, totals: &totals{}, chans: map[string]*channel{}}
			return ld.loadJournal(path, "ch")
		}
		c, err := load()
		if err != nil {
			if !errors.Is(err, ErrJournal) {
				t.Fatalf("error %v is not ErrJournal", err)
			}
			return
		}
		if err := c.journal.compact(c.entries, c.head); err != nil {
			t.Fatal(err)
		}
		c.journal.close()
		for i := 1; i < len(c.entries); i++ {
			if c.entries[i].seq <= c.entries[i-1].seq {
				t.Fatalf("entries out of order: %d after %d", c.entries[i].seq, c.entries[i-1].seq)
			}
		}
		again, err := load()
		if err != nil {
			t.Fatalf("reloading the rewritten journal: %v", err)
		}
		again.journal.close()
		if again.epoch != c.epoch || again.head != c.head || len(again.entries) != len(c.entries) {
			t.Fatalf("reload differs: epoch %q/%q head %d/%d entries %d/%d", again.epoch, c.epoch, again.head, c.head, len(again.entries), len(c.entries))
		}
	})
}
