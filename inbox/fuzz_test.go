package inbox

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// FuzzSubjectToken: any delivery id maps to one valid subject token and
// bucket key, and distinct short ids to distinct tokens.
func FuzzSubjectToken(f *testing.F) {
	for _, s := range []string{"", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "a.b", "*", ">", "a b", "\x00\xff", strings.Repeat("x", 97)} {
		f.Add(s, s+"1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := stored.SubjectToken(a), stored.SubjectToken(b)
		for _, tok := range []string{ta, tb} {
			if tok == "" || strings.ContainsAny(tok, ".*> \t\r\n") {
				t.Fatalf("invalid token %q", tok)
			}
			for _, c := range tok {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
					t.Fatalf("token %q has %q, not valid in a bucket key", tok, c)
				}
			}
		}
		if a != b && ta == tb {
			t.Fatalf("ids %q and %q share token %q", a, b, ta)
		}
		k := stateKey(a)
		if strings.ContainsAny(k, ".*> ") || (a != b && k == stateKey(b)) {
			t.Fatalf("state key %q", k)
		}
	})
}

// FuzzNotADelivery: any stored message is judged without a panic, and one
// the inbox could not have written is never taken for a delivery.
func FuzzNotADelivery(f *testing.F) {
	f.Add("1", "push", []byte(`{}`))
	f.Add("", "push", []byte(`{}`))
	f.Add("1", "", []byte(`{}`))
	f.Add("1", "push", []byte(`[1]`))
	f.Add("1", "push", []byte("\xef\xbb\xbf{}"))
	f.Fuzz(func(t *testing.T, version, event string, data []byte) {
		h := nats.Header{}
		if version != "" {
			h.Set(stored.HeaderVersion, version)
		}
		if event != "" {
			h.Set(stored.HeaderEvent, event)
		}
		reason := stored.NotADelivery(h, data)
		if reason == "" && (version != "1" || event == "") {
			t.Fatalf("taken for a delivery: version %q event %q", version, event)
		}
		r := stored.Record(h, data, len(data), 1, nil)
		if r.Status != delivery.StatusQueued || string(r.Payload) != string(data) {
			t.Fatalf("record %+v", r)
		}
	})
}
