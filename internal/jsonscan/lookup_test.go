package jsonscan

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// logPaths are the paths `forgehooks serve` logs, used throughout the tests.
var logPaths = []Path{{"repository", "full_name"}, {"sender", "login"}, {"organization", "login"}}

// referenceLookup is what encoding/json says the string at p is: data decoded
// into a map[string]json.RawMessage, the top-level member into another, and
// its member into a string (found: each exists, and the last is a JSON string).
// ok reports whether data is one JSON object.
func referenceLookup(t testing.TB, data []byte, p Path) (s string, found, ok bool) {
	if _, _, ok := reference(t, data); !ok {
		return "", false, false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("%q is an object, but does not decode: %v", data, err)
	}
	var inner map[string]json.RawMessage
	if raw, has := top[p[0]]; !has || json.Unmarshal(raw, &inner) != nil {
		return "", false, true
	}
	raw, has := inner[p[1]]
	if !has || raw[0] != '"' {
		return "", false, true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("string %q does not decode: %v", raw, err)
	}
	return s, true, true
}

// checkLookup compares Lookup with encoding/json on one input and paths.
func checkLookup(t testing.TB, data []byte, paths []Path) {
	t.Helper()
	res := make([]Result, len(paths)+1) // room to spare must be left alone
	res[len(paths)] = Result{start: 1, end: 2, found: true}
	err := Lookup(data, paths, res)
	if res[len(paths)] != (Result{start: 1, end: 2, found: true}) {
		t.Fatalf("Lookup(%q) wrote past its paths", data)
	}
	_, _, wantOK := reference(t, data)
	if (err == nil) != wantOK {
		t.Fatalf("Lookup(%q) err = %v; encoding/json says object = %v", data, err, wantOK)
	}
	if err != nil {
		var se *SyntaxError
		if json.Valid(data) != errors.Is(err, ErrNotObject) || !json.Valid(data) && !errors.As(err, &se) {
			t.Fatalf("Lookup(%q) err = %v (%T): wrong kind", data, err, err)
		}
		if _, serr := Scan(data); serr == nil || serr.Error() != err.Error() {
			t.Fatalf("Lookup(%q) err = %v, Scan's = %v", data, err, serr)
		}
		for k, r := range res[:len(paths)] {
			if r != (Result{}) {
				t.Fatalf("Lookup(%q) failed but res[%d] = %+v", data, k, r)
			}
		}
		return
	}
	for k, p := range paths {
		want, wantFound, _ := referenceLookup(t, data, p)
		if got := res[k].String(data); got != want || res[k].Found() != wantFound {
			t.Fatalf("Lookup(%q) %q = %q (found %v), encoding/json %q (found %v)", data, p, got, res[k].Found(), want, wantFound)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [3]string // repository.full_name, sender.login, organization.login; "-" for not found
		err  string    // substring of the error; "" for none
	}{
		{"empty object", `{}`, [3]string{"-", "-", "-"}, ""},
		{"all three", `{"repository":{"id":1,"full_name":"o/r"},"sender":{"login":"u"},"organization":{"login":"o"}}`, [3]string{"o/r", "u", "o"}, ""},
		{"white space", " {\n \"sender\" : { \"login\" : \"u\" } } ", [3]string{"-", "u", "-"}, ""},
		{"empty string", `{"sender":{"login":""}}`, [3]string{"-", "", "-"}, ""},
		{"nested deeper ignored", `{"sender":{"x":{"login":"deep"}}}`, [3]string{"-", "-", "-"}, ""},
		{"nested deeper then found", `{"sender":{"x":{"login":"deep"},"login":"u"}}`, [3]string{"-", "u", "-"}, ""},
		{"arrays ignored", `{"sender":[{"login":"a"}]}`, [3]string{"-", "-", "-"}, ""},
		{"not at the top", `{"x":{"sender":{"login":"a"}}}`, [3]string{"-", "-", "-"}, ""},
		{"inner name at the top", `{"login":"a","full_name":"b"}`, [3]string{"-", "-", "-"}, ""},
		{"outer name as a value", `{"x":"sender","y":{"login":"a"}}`, [3]string{"-", "-", "-"}, ""},
		{"member after another object", `{"sender":{"a":{"b":1},"c":[{"login":"x"}],"login":"u"},"z":{"login":"v"}}`, [3]string{"-", "u", "-"}, ""},
		{"last inner duplicate wins", `{"sender":{"login":"a","login":"b"}}`, [3]string{"-", "b", "-"}, ""},
		{"later inner non-string wins", `{"sender":{"login":"a","login":5}}`, [3]string{"-", "-", "-"}, ""},
		{"later inner null wins", `{"sender":{"login":"a","login":null}}`, [3]string{"-", "-", "-"}, ""},
		{"later outer replaces whole", `{"sender":{"login":"a"},"sender":{"id":1}}`, [3]string{"-", "-", "-"}, ""},
		{"later outer found", `{"sender":{"id":1},"sender":{"login":"b"}}`, [3]string{"-", "b", "-"}, ""},
		{"later outer null", `{"sender":{"login":"a"},"sender":null}`, [3]string{"-", "-", "-"}, ""},
		{"later outer string", `{"sender":{"login":"a"},"sender":"x"}`, [3]string{"-", "-", "-"}, ""},
		{"outer null", `{"repository":null,"sender":{"login":"u"}}`, [3]string{"-", "u", "-"}, ""},
		{"outer array", `{"repository":["full_name"]}`, [3]string{"-", "-", "-"}, ""},
		{"empty outer", `{"sender":{}}`, [3]string{"-", "-", "-"}, ""},
		{"escaped keys", `{"s\u0065nder":{"\u006cogin":"u"}}`, [3]string{"-", "u", "-"}, ""},
		{"escaped solidus is not a name", `{"sender":{"log\/in":"u"}}`, [3]string{"-", "-", "-"}, ""},
		{"case differs", `{"Sender":{"login":"u"},"repository":{"Full_Name":"o/r"}}`, [3]string{"-", "-", "-"}, ""},
		{"key with suffix", `{"senders":{"login":"u"},"sender":{"logins":"v"}}`, [3]string{"-", "-", "-"}, ""},
		{"escapes in value", `{"sender":{"login":"a\"b\\c\/d\n\u00e9\ud83d\ude00"}}`, [3]string{"-", "a\"b\\c/d\né😀", "-"}, ""},
		{"lone surrogate", `{"sender":{"login":"\ud83dx"}}`, [3]string{"-", "\ufffdx", "-"}, ""},
		{"invalid UTF-8 replaced", "{\"sender\":{\"login\":\"a\xffb\"}}", [3]string{"-", "a\ufffdb", "-"}, ""},
		{"invalid UTF-8 in a key", "{\"sender\":{\"login\xff\":\"u\"}}", [3]string{"-", "-", "-"}, ""},
		{"valid UTF-8 kept", `{"repository":{"full_name":"créé/r"}}`, [3]string{"créé/r", "-", "-"}, ""},
		{"one outer, two paths", `{"organization":{"login":"o"},"sender":{"login":"u"}}`, [3]string{"-", "u", "o"}, ""},

		{"empty", ``, [3]string{"-", "-", "-"}, "unexpected end"},
		{"array", `[{"sender":{"login":"u"}}]`, [3]string{"-", "-", "-"}, "a JSON array"},
		{"null", `null`, [3]string{"-", "-", "-"}, "a JSON null"},
		{"found, then invalid", `{"sender":{"login":"u"},"x":01}`, [3]string{"-", "-", "-"}, "after object key-value pair"},
		{"found, then truncated", `{"sender":{"login":"u"}`, [3]string{"-", "-", "-"}, "unexpected end"},
		{"invalid key", `{"sender":{login:"u"}}`, [3]string{"-", "-", "-"}, "object key"},
		{"control byte in value", "{\"sender\":{\"login\":\"a\tb\"}}", [3]string{"-", "-", "-"}, "in string literal"},
		{"trailing data", `{"sender":{"login":"u"}}x`, [3]string{"-", "-", "-"}, "after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res [3]Result
			err := Lookup([]byte(tt.in), logPaths, res[:])
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			for k, p := range logPaths {
				got := res[k].String([]byte(tt.in))
				if !res[k].Found() {
					got = "-"
				}
				if got != tt.want[k] {
					t.Errorf("%s.%s = %q, want %q", p[0], p[1], got, tt.want[k])
				}
			}
			checkLookup(t, []byte(tt.in), logPaths) // and encoding/json agrees with the table
		})
	}
}

// TestLookupPaths covers paths themselves: repeated, sharing a member, with
// names that need escaping or are not valid UTF-8, and none at all.
func TestLookupPaths(t *testing.T) {
	data := []byte(`{"a":{"b":"1","c":"2","":"3","\"":"4","é":"5","\ufffd":"6"},"":{"":"7"},"é":{"\u00e9":"8"}}`)
	paths := []Path{
		{"a", "b"}, {"a", "c"}, {"a", "b"}, {"a", ""}, {"a", `"`}, {"a", `\"`}, {"a", "é"},
		{"a", "\ufffd"}, {"a", "\xff"}, {"", ""}, {"é", "é"}, {"a", "d"}, {"b", "a"},
	}
	checkLookup(t, data, paths)
	checkLookup(t, data, nil)
	if err := Lookup([]byte(`[]`), nil, nil); !errors.Is(err, ErrNotObject) {
		t.Errorf("Lookup of an array without paths: err = %v", err)
	}
	many := make([]Path, MaxPaths+1)
	defer func() {
		if recover() == nil {
			t.Errorf("Lookup with %d paths did not panic", len(many))
		}
	}()
	Lookup(data, many, make([]Result, len(many)))
}

// TestLookupCorpus checks every committed example against encoding/json, and
// Lookup's validation against Scan's.
func TestLookupCorpus(t *testing.T) {
	paths := slices.Concat(logPaths, []Path{{"repository", "name"}, {"sender", "type"}, {"pull_request", "title"}, {"issue", "title"}})
	found := 0
	for _, ex := range corpus.All() {
		checkLookup(t, ex.Body, paths)
		var res [3]Result
		if err := Lookup(ex.Body, logPaths, res[:]); err == nil && res[1].Found() {
			found++
		}
	}
	if found == 0 {
		t.Error("no example has a sender.login: the corpus is not what this test expects")
	}
}

func TestLookupAllocs(t *testing.T) {
	bodies := [][]byte{[]byte(`{"sender":{"login":"\u00e9"},"x":[1,{"y":"z"}]}`), []byte(`{"a":"b"}`)}
	for _, ex := range corpus.Public()[:20] {
		bodies = append(bodies, ex.Body)
	}
	var res [3]Result
	for _, body := range bodies {
		n := testing.AllocsPerRun(20, func() {
			if err := Lookup(body, logPaths, res[:]); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("Lookup of %.40q: %v allocations", body, n)
		}
	}
}

// TestLookupInt64 checks numbers found by Lookup against encoding/json's
// decoding of the member into an int64.
func TestLookupInt64(t *testing.T) {
	paths := []Path{{"installation", "id"}}
	for _, tc := range []struct {
		name, in string
		want     int64
		ok       bool
	}{
		{"id", `{"installation":{"id":42}}`, 42, true},
		{"negative", `{"installation":{"id":-7}}`, -7, true},
		{"largest", `{"installation":{"id":9223372036854775807}}`, 9223372036854775807, true},
		{"smallest", `{"installation":{"id":-9223372036854775808}}`, -9223372036854775808, true},
		{"too large", `{"installation":{"id":9223372036854775808}}`, 0, false},
		{"fraction", `{"installation":{"id":1.5}}`, 0, false},
		{"exponent", `{"installation":{"id":1e3}}`, 0, false},
		{"string", `{"installation":{"id":"42"}}`, 0, false},
		{"null", `{"installation":{"id":null}}`, 0, false},
		{"absent", `{"installation":{"node_id":"x"}}`, 0, false},
		{"nested deeper", `{"installation":{"account":{"id":5}}}`, 0, false},
		{"last duplicate wins", `{"installation":{"id":1,"id":2}}`, 2, true},
		{"a later installation replaces the first", `{"installation":{"id":1},"installation":{"x":1}}`, 0, false},
		{"escaped key", `{"inst\u0061llation":{"\u0069d":3}}`, 3, true},
		{"after other members", `{"action":"opened","x":[1,{"id":9}],"installation":{"a":[],"id":11}}`, 11, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res [1]Result
			if err := Lookup([]byte(tc.in), paths, res[:]); err != nil {
				t.Fatal(err)
			}
			got, ok := res[0].Int64([]byte(tc.in))
			if got != tc.want || ok != tc.ok {
				t.Errorf("Int64 = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
			if res[0].Found() != (tc.name == "string") {
				t.Errorf("Found = %v: Found is for strings alone", res[0].Found())
			}
		})
	}
}
