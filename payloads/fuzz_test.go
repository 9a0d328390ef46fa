package payloads_test

import (
	"encoding/json"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
)

// FuzzParse: Parse never panics on any name and body; what it decodes encodes to
// valid JSON that decodes again to the same document.
func FuzzParse(f *testing.F) {
	// Small corpus bodies only: the fuzzer minimises every new input, which takes
	// long for the large ones and stalls a short run.
	for _, ex := range corpus.All() {
		if len(ex.Body) < 2500 {
			f.Add(ex.Event, ex.Body)
		}
	}
	f.Add("issues", []byte(`{"action":"opened","issue":{"id":"x"}}`))
	f.Add("nope", []byte(`{"action":1}`))
	f.Add("push", []byte(`{"repository":{"created_at":"2019-05-15 15:20:33"}}`))
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		p, err := payloads.Parse(name, body)
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned %T with error %v", p, err)
			}
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal after Parse(%q, %q): %v", name, body, err)
		}
		again, err := payloads.Parse(name, out)
		if err != nil {
			t.Fatalf("Parse of the re-encoded %s: %v", out, err)
		}
		out2, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsonDiff(t, out, out2); d != "" {
			t.Fatalf("encoding is not stable (-first +second):\n%s", d)
		}
		if d := jsonDiff(t, body, out); d != "" && payloads.PayloadName(p) != "" {
			t.Fatalf("Parse(%q, %q) then Marshal differs from the body (-body +encoded):\n%s", name, body, d)
		}
	})
}
