package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// reference is what encoding/json says: whether data is one JSON object, and its
// top-level "action" decoded into a string (found: the member exists and is a
// JSON string).
func reference(t testing.TB, data []byte) (action string, found, ok bool) {
	if !json.Valid(data) {
		return "", false, false
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); trimmed[0] != '{' {
		return "", false, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("json.Valid accepted %q but Unmarshal failed: %v", data, err)
	}
	raw, has := m["action"]
	if !has || raw[0] != '"' {
		return "", false, true
	}
	if err := json.Unmarshal(raw, &action); err != nil {
		t.Fatalf("string %q does not decode: %v", raw, err)
	}
	return action, true, true
}

// check compares Scan with encoding/json on one input.
func check(t testing.TB, data []byte) {
	t.Helper()
	want, wantFound, wantOK := reference(t, data)
	res, err := Scan(data)
	if (err == nil) != wantOK {
		t.Fatalf("Scan(%q) err = %v; encoding/json says object = %v", data, err, wantOK)
	}
	if err != nil {
		var se *SyntaxError
		if json.Valid(data) != errors.Is(err, ErrNotObject) || !json.Valid(data) && !errors.As(err, &se) {
			t.Fatalf("Scan(%q) err = %v (%T): wrong kind", data, err, err)
		}
		return
	}
	if got := res.String(data); got != want || res.Found() != wantFound {
		t.Fatalf("Scan(%q) action = %q (found %v), encoding/json %q (found %v)", data, got, res.Found(), want, wantFound)
	}
}

func TestScan(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		action string
		found  bool
		err    string // substring of the error; "" for none
	}{
		{"empty object", `{}`, "", false, ""},
		{"action", `{"action":"opened"}`, "opened", true, ""},
		{"white space", " \t\r\n{ \"action\" : \"opened\" } \n", "opened", true, ""},
		{"empty action", `{"action":""}`, "", true, ""},
		{"last duplicate wins", `{"action":"a","x":1,"action":"b"}`, "b", true, ""},
		{"later non-string wins", `{"action":"a","action":5}`, "", false, ""},
		{"later null wins", `{"action":"a","action":null}`, "", false, ""},
		{"later object wins", `{"action":"a","action":{"action":"c"}}`, "", false, ""},
		{"later array wins", `{"action":"a","action":["c"]}`, "", false, ""},
		{"string after non-string", `{"action":[1],"action":"b"}`, "b", true, ""},
		{"nested action ignored", `{"issue":{"action":"nested"}}`, "", false, ""},
		{"nested then top", `{"a":[{"action":"x"}],"action":"top"}`, "top", true, ""},
		{"action as a value", `{"x":"action"}`, "", false, ""},
		{"escaped key", `{"\u0061ction":"opened"}`, "opened", true, ""},
		{"escaped key with solidus", `{"act\/ion":"x"}`, "", false, ""},
		{"case differs", `{"Action":"opened"}`, "", false, ""},
		{"key with suffix", `{"actions":"x"}`, "", false, ""},
		{"escapes in value", `{"action":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac"}`, "a\"b\\c/d\b\f\n\r\té€", true, ""},
		{"surrogate pair", `{"action":"\ud83d\ude00"}`, "😀", true, ""},
		{"lone high surrogate", `{"action":"\ud83dx"}`, "\ufffdx", true, ""},
		{"lone low surrogate", `{"action":"\ude00"}`, "\ufffd", true, ""},
		{"high then non-low", `{"action":"\ud83d\u0041"}`, "\ufffdA", true, ""},
		{"invalid UTF-8 replaced", "{\"action\":\"a\xffb\"}", "a\ufffdb", true, ""},
		{"truncated UTF-8 replaced per byte", "{\"action\":\"\xf0\x9f\x98\"}", "\ufffd\ufffd\ufffd", true, ""},
		{"encoded surrogate replaced per byte", "{\"action\":\"\xed\xa0\x80\"}", "\ufffd\ufffd\ufffd", true, ""},
		{"invalid UTF-8 in other strings", "{\"x\":\"\xff\",\"action\":\"ok\"}", "ok", true, ""},
		{"valid UTF-8 kept", `{"action":"créé"}`, "créé", true, ""},
		{"DEL kept", "{\"action\":\"\x7f\"}", "\x7f", true, ""},
		{"numbers", `{"a":[0,-0,1.5,-1e10,2E+3,3e-2,123456789012345678901234567890]}`, "", false, ""},
		{"literals", `{"a":[true,false,null],"b":{}}`, "", false, ""},
		{"long string", `{"action":"` + strings.Repeat("abcdefgh", 40) + `"}`, strings.Repeat("abcdefgh", 40), true, ""},

		{"empty", ``, "", false, "unexpected end"},
		{"spaces only", `   `, "", false, "unexpected end"},
		{"array", `[{"action":"x"}]`, "", false, "not a JSON object: a JSON array"},
		{"string", `"action"`, "", false, "a JSON string"},
		{"null", `null`, "", false, "a JSON null"},
		{"number", `12`, "", false, "a JSON number"},
		{"boolean", `true`, "", false, "a JSON boolean"},
		{"two objects", `{}{}`, "", false, "after top-level value"},
		{"trailing comma", `{"a":1,}`, "", false, "beginning of object key"},
		{"unclosed", `{"action":"x"`, "", false, "unexpected end"},
		{"unclosed string", `{"action":"x}`, "", false, "unexpected end"},
		{"control byte in string", "{\"action\":\"a\tb\"}", "", false, "in string literal"},
		{"bad escape", `{"action":"\x"}`, "", false, "escape"},
		{"short unicode escape", `{"action":"\u12"}`, "", false, "hexadecimal"},
		{"leading zero", `{"a":01}`, "", false, "after object key-value pair"},
		{"bare minus", `{"a":-}`, "", false, "numeric literal"},
		{"bare dot", `{"a":1.}`, "", false, "numeric literal"},
		{"bad exponent", `{"a":1e}`, "", false, "numeric literal"},
		{"plus sign", `{"a":+1}`, "", false, "beginning of value"},
		{"bad literal", `{"a":nul}`, "", false, "literal null"},
		{"single quotes", `{'a':1}`, "", false, "object key"},
		{"missing colon", `{"a" 1}`, "", false, "after object key"},
		{"array missing comma", `{"a":[1 2]}`, "", false, "after array element"},
		{"mismatched close", `{"a":[1}`, "", false, "after array element"},
		{"BOM", "\ufeff{}", "", false, "beginning of value"},
		{"NUL after", "{}\x00", "", false, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Scan([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got := res.String([]byte(tt.in)); got != tt.action || res.Found() != tt.found {
				t.Errorf("action = %q (found %v), want %q (found %v)", got, res.Found(), tt.action, tt.found)
			}
			check(t, []byte(tt.in)) // and encoding/json agrees with the table
		})
	}
}

func TestScanDepth(t *testing.T) {
	nest := func(depth int) []byte {
		// One object holding depth-1 nested arrays.
		return []byte(`{"a":` + strings.Repeat("[", depth-1) + "0" + strings.Repeat("]", depth-1) + `}`)
	}
	for _, depth := range []int{1, 2, 100, MaxDepth - 1, MaxDepth, MaxDepth + 1, MaxDepth + 100} {
		data := nest(depth)
		_, err := Scan(data)
		if wantOK := depth <= MaxDepth; (err == nil) != wantOK || json.Valid(data) != wantOK {
			t.Errorf("depth %d: Scan err = %v, json.Valid = %v, want ok = %v", depth, err, json.Valid(data), wantOK)
		}
	}
	data := []byte(strings.Repeat(`{"a":`, MaxDepth+1))
	if _, err := Scan(data); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("deep objects: err = %v", err)
	}
}

// TestScanCorpus checks every committed example and the corpus's own idea of
// each example's action.
func TestScanCorpus(t *testing.T) {
	for _, ex := range corpus.All() {
		res, err := Scan(ex.Body)
		if err != nil {
			t.Errorf("%s: %v", ex.Path, err)
			continue
		}
		if got := res.String(ex.Body); got != ex.Action {
			t.Errorf("%s: action %q, want %q", ex.Path, got, ex.Action)
		}
		check(t, ex.Body)
	}
}

func TestScanAllocs(t *testing.T) {
	bodies := [][]byte{[]byte(`{"action":"opened","x":[1,2,{"y":"\u00e9"}]}`), []byte(`{"a":"b"}`)}
	for _, ex := range corpus.Public()[:20] {
		bodies = append(bodies, ex.Body)
	}
	for _, body := range bodies {
		var res Result
		n := testing.AllocsPerRun(20, func() {
			var err error
			if res, err = Scan(body); err != nil {
				t.Fatal(err)
			}
			_ = res.Bytes(body)
		})
		if n != 0 {
			t.Errorf("Scan and Bytes of %.40q: %v allocations", body, n)
		}
	}
	// A value that needs decoding allocates its decoded copy, once.
	body := []byte(`{"action":"\u00e9"}`)
	if n := testing.AllocsPerRun(20, func() { r, _ := Scan(body); _ = r.Bytes(body) }); n != 1 {
		t.Errorf("escaped value: %v allocations, want 1", n)
	}
}

// TestStopMask checks the eight-byte test against the byte table for every byte
// in every lane.
func TestStopMask(t *testing.T) {
	for lane := 0; lane < 8; lane++ {
		for c := 0; c < 256; c++ {
			var w [8]byte
			for k := range w {
				w[k] = 'a'
			}
			w[lane] = byte(c)
			x := uint64(0)
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(w[k])
			}
			m := PlainMask(x)
			if plain[c] != (m == 0) {
				t.Fatalf("byte %#x in lane %d: mask %#x", c, lane, m)
			}
			if m != 0 && m&-m != 0x80<<(8*lane) {
				t.Fatalf("byte %#x in lane %d: lowest flag %#x", c, lane, m&-m)
			}
		}
	}
}

// TestStopMaskAnyNeighbours checks the lowest flag of the eight-byte test with
// plain bytes of every kind below the lane and any bytes above it, where a
// wrong borrow between lanes would show.
func TestStopMaskAnyNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for lane := 0; lane < 8; lane++ {
		for c := 0; c < 256; c++ {
			for n := 0; n < 64; n++ {
				var w [8]byte
				for k := range w {
					switch {
					case k < lane:
						for w[k] = byte(rng.IntN(256)); !plain[w[k]]; w[k] = byte(rng.IntN(256)) {
						}
					case k == lane:
						w[k] = byte(c)
					default:
						w[k] = byte(rng.IntN(256))
					}
				}
				m := PlainMask(binary.LittleEndian.Uint64(w[:]))
				low := 8
				if m != 0 {
					low = bits.TrailingZeros64(m) >> 3
				}
				if plain[c] && low <= lane || !plain[c] && low != lane {
					t.Fatalf("% x: lowest flag in lane %d; lane %d holds %#x", w, low, lane, c)
				}
			}
		}
	}
}
