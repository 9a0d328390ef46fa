package payloads

import (
	"encoding/json"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	codec "forgehooks.dev/forgehooks/payloads/codec"
)

// wholeEvents are the events a typed handler of a whole event can be
// registered for: every name of the tuple without an action.
func wholeEvents() []string {
	var events []string
	for _, n := range EmitterEventNames() {
		if !strings.Contains(n, ".") {
			events = append(events, n)
		}
	}
	return events
}

// checkWholeDecoder checks codec.WholeDecoder's promise to the emitter on one
// payload: when it vouches for a payload, that payload is a JSON object that
// the emitter's own scan accepts, encoding/json finds valid, and whose action
// is the one the scan finds. It reports whether the decoder vouched.
func checkWholeDecoder(t *testing.T, event string, body []byte) bool {
	t.Helper()
	dec := codec.WholeDecoder("forgehooks.dev/forgehooks/payloads", event, func(in codec.Input) (Payload, error) { return parse(event, in) })
	v, action, ok := dec.Decode(body, false)
	if vo, ao, oko := dec.Decode(body, true); oko != ok || ao != action || (vo == nil) != (v == nil) {
		t.Fatalf("Decode(%q, %q) owned = %T, %q, %v; not owned %T, %q, %v", event, body, vo, ao, oko, v, action, ok)
	}
	if !ok {
		if v != nil || action != "" {
			t.Fatalf("Decode(%q, %q) = %v, %q, false: a value without ok", event, body, v, action)
		}
		return false
	}
	res, err := jsonscan.Scan(body)
	if err != nil {
		t.Fatalf("Decode(%q, %q) vouched for a payload the scan refuses: %v", event, body, err)
	}
	if !json.Valid(body) {
		t.Fatalf("Decode(%q, %q) vouched for invalid JSON", event, body)
	}
	if want := res.String(body); action != want {
		t.Fatalf("Decode(%q, %q) action = %q, the scan finds %q", event, body, action, want)
	}
	if _, isPayload := v.(Payload); !isPayload {
		t.Fatalf("Decode(%q, %q) = %T, not a Payload", event, body, v)
	}
	return true
}

// TestWholeDecoderCorpus: over every example payload, the decoder vouches for
// the payloads of its event (the common case the emitter saves its scan for)
// and agrees with the scan.
func TestWholeDecoderCorpus(t *testing.T) {
	vouched, total := 0, 0
	for _, ex := range corpus.All() {
		total++
		if checkWholeDecoder(t, ex.Event, ex.Body) {
			vouched++
		}
	}
	if vouched < total*9/10 {
		t.Errorf("the decoder vouched for %d of %d example payloads; want nearly all", vouched, total)
	}
	t.Logf("vouched for %d of %d example payloads", vouched, total)
}

// TestWholeDecoderCases: payloads whose validity or action is easy to get
// wrong: the decoder vouches only for what the scan agrees with.
func TestWholeDecoderCases(t *testing.T) {
	for _, tc := range []struct {
		event, body string
		vouch       bool // the decoder is expected to vouch
	}{
		{"issues", `{"action":"opened","issue":{"number":1}}`, true},
		{"issues", `{"action":"opened","action":"closed"}`, true},
		{"issues", `{"action":"closed","action":"op\u0065ned"}`, true},
		{"issues", `{"action":"brand_new"}`, true},
		{"issues", `{"action":5}`, false},
		{"issues", `{"action":null}`, false},
		{"issues", `{}`, false},
		{"issues", `{"action":"opened"`, false},
		{"issues", `{"action":"opened"} x`, false},
		{"issues", `[{"action":"opened"}]`, false},
		{"issues", `{"action":"opened","x":[1,2,}`, false},
		{"issues", `{"action":"opened","x":"\u12"}`, false},
		{"issues", "{\"action\":\"opened\",\"x\":\"\xff\"}", true},
		{"push", `{"ref":"refs/heads/main"}`, true},
		{"push", `{"ref":"refs/heads/main","action":"x"}`, false},
		{"push", `{"ref":"refs/heads/main","\u0061ction":"x"}`, false},
		{"push", `{"ref":"refs/heads/main","x":{"action":"nested"}}`, true},
		{"push", `{"ref":5}`, false},
		{"push", `{"ref":"a",}`, false},
		{"push", `{"x":01}`, false},
		{"push", `{"x":tru}`, false},
		{"push", `{"x":1e}`, false},
		{"push", strings.Repeat(`{"x":`, 10001) + `1` + strings.Repeat(`}`, 10001), false},
		{"ping", `{"zen":"z","hook_id":1}`, true},
		{"ping", "\ufeff{\"zen\":\"z\"}", false},
		{"ping", "\xef\xbb\xbf{\"zen\":\"z\"}", false},
		{"ping", " \t\r\n{\"zen\":\"z\"} \n", true},
		{"ping", "\x00{\"zen\":\"z\"}", false},
		{"ping", "{\"zen\":\"z\"}\x00", false},
		{"ping", "{\"zen\":\"a\x01b\"}", false},
		{"ping", `{"zen":"z"}{}`, false},
		{"ping", `null`, false},
		{"ping", `"x"`, false},
	} {
		if got := checkWholeDecoder(t, tc.event, []byte(tc.body)); got != tc.vouch {
			t.Errorf("Decode(%q, %.60q) vouched %v, want %v", tc.event, tc.body, got, tc.vouch)
		}
	}
}

// FuzzWholeDecoder: on any payload of any event, the decoder vouches only for
// what the emitter's scan accepts, with the same action.
func FuzzWholeDecoder(f *testing.F) {
	events := wholeEvents()
	index := make(map[string]int, len(events))
	for i, e := range events {
		index[e] = i
	}
	for _, ex := range corpus.All() {
		if len(ex.Body) < 2500 {
			f.Add(uint8(index[ex.Event]), ex.Body)
		}
	}
	f.Add(uint8(index["push"]), []byte(`{"ref":"x","action":"y"}`))
	f.Add(uint8(index["issues"]), []byte(`{"action":"opened","action":"closed"}`))
	f.Fuzz(func(t *testing.T, i uint8, body []byte) {
		checkWholeDecoder(t, events[int(i)%len(events)], body)
	})
}
