package stored

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

var testKey = bytes.Repeat([]byte{7}, MinKeyLen)

func sealedMsg() *nats.Msg {
	m := &nats.Msg{Data: []byte(`{"action":"opened"}`), Header: nats.Header{
		HeaderVersion:   {Version},
		HeaderEvent:     {"issues"},
		HeaderTenant:    {"acme"},
		HeaderDelivery:  {"d-1"},
		"X-Forge-Event": {"issues"},
		"Accept":        {"a", "b"},
	}}
	SetSeal(testKey, m)
	return m
}

func TestSeal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(m *nats.Msg) []byte // returns the key to check with
		want   error
	}{
		{"intact", func(*nats.Msg) []byte { return testKey }, nil},
		{"server headers added", func(m *nats.Msg) []byte {
			m.Header.Set("Nats-Sequence", "9")
			m.Header.Set("Nats-Msg-Id", "x")
			return testKey
		}, nil},
		{"nonce added", func(m *nats.Msg) []byte { m.Header.Set(HeaderNonce, "n"); return testKey }, nil},
		{"body changed", func(m *nats.Msg) []byte { m.Data = []byte(`{"action":"closed"}`); return testKey }, ErrBadSeal},
		{"body extended", func(m *nats.Msg) []byte { m.Data = append(m.Data, ' '); return testKey }, ErrBadSeal},
		{"header changed", func(m *nats.Msg) []byte { m.Header.Set(HeaderTenant, "evil"); return testKey }, ErrBadSeal},
		{"header added", func(m *nats.Msg) []byte { m.Header.Set("X-Forge-Tenant", "evil"); return testKey }, ErrBadSeal},
		{"header removed", func(m *nats.Msg) []byte { m.Header.Del(HeaderTenant); return testKey }, ErrBadSeal},
		{"value reordered", func(m *nats.Msg) []byte { m.Header["Accept"] = []string{"b", "a"}; return testKey }, ErrBadSeal},
		{"value moved to another name", func(m *nats.Msg) []byte {
			m.Header["Accept"] = []string{"a"}
			m.Header.Add("Accepb", "b")
			return testKey
		}, ErrBadSeal},
		{"name case changed", func(m *nats.Msg) []byte {
			m.Header["forgehooks-tenant"] = m.Header[HeaderTenant]
			delete(m.Header, HeaderTenant)
			return testKey
		}, ErrBadSeal},
		{"second seal", func(m *nats.Msg) []byte { m.Header.Add(HeaderSeal, m.Header.Get(HeaderSeal)); return testKey }, ErrBadSeal},
		{"seal garbled", func(m *nats.Msg) []byte { m.Header.Set(HeaderSeal, "v1=!!"); return testKey }, ErrBadSeal},
		{"wrong key", func(*nats.Msg) []byte { return bytes.Repeat([]byte{8}, MinKeyLen) }, ErrBadSeal},
		{"no seal", func(m *nats.Msg) []byte { m.Header.Del(HeaderSeal); return testKey }, ErrUnsealed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sealedMsg()
			key := tc.change(m)
			err := CheckSeal(key, m.Header, m.Data)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("CheckSeal: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSealFraming: the length prefixes keep apart messages whose
// concatenated names, values and body would read alike.
func TestSealFraming(t *testing.T) {
	t.Parallel()
	a := Seal(testKey, nats.Header{"A": {"bc"}}, []byte("d"))
	for _, b := range []string{
		Seal(testKey, nats.Header{"Ab": {"c"}}, []byte("d")),
		Seal(testKey, nats.Header{"A": {"b"}}, []byte("cd")),
		Seal(testKey, nats.Header{"A": {"b", "c"}}, []byte("d")),
		Seal(testKey, nats.Header{"A": {"bc"}, "B": {}}, []byte("d")) + "x",
	} {
		if a == b {
			t.Fatalf("two messages seal alike: %s", a)
		}
	}
	// What NATS does not carry does not count.
	if b := Seal(testKey, nats.Header{"A": {"  bc"}, "B": {}}, []byte("d")); a != b {
		t.Fatalf("a value's leading blanks or an empty name changed the seal")
	}
	if !strings.HasPrefix(a, "v1=") {
		t.Fatalf("seal %q without its version", a)
	}
}

// TestSealStable: the seal of a given message never changes (messages
// stored by earlier versions, sealed then, must still check). The values
// were computed by the first implementation of the encoding.
func TestSealStable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    nats.Header
		data []byte
		want string
	}{
		{"a delivery", sealedMsg().Header, sealedMsg().Data, "v1=W-6owusSZNROc6NtyjLzssO5loV2GT2_6_EshYA0FcY"},
		{"what the seal leaves out", nats.Header{"A": {" bc", "d"}, "nats-x": {"y"}, "NATS-Z": {"1"}, "B": {}, "": {"e"}, HeaderNonce: {"n"}},
			[]byte("body"), "v1=qepy8v5d1i89f8WpJNr3IkWI1l1dvOPhabqve0Gm3K8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Seal(testKey, tc.h, tc.data); got != tc.want {
				t.Fatalf("Seal = %s, want %s", got, tc.want)
			}
			h := maps.Clone(tc.h)
			h.Set(HeaderSeal, tc.want)
			if err := CheckSeal(testKey, h, tc.data); err != nil {
				t.Fatalf("CheckSeal: %v", err)
			}
		})
	}
}

// referenceSeal is the seal's encoding written plainly, piece by piece,
// for FuzzSeal to compare with.
func referenceSeal(key []byte, h nats.Header, data []byte) string {
	m := hmac.New(sha256.New, key)
	str := func(s string) {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(len(s)))
		m.Write(b[:])
		m.Write([]byte(s))
	}
	var names []string
	for k, v := range h {
		if k != "" && k != HeaderSeal && k != HeaderNonce && !strings.HasPrefix(strings.ToLower(k), "nats-") && len(v) > 0 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(names)))
	m.Write(n[:])
	for _, k := range names {
		str(k)
		binary.BigEndian.PutUint32(n[:], uint32(len(h[k])))
		m.Write(n[:])
		for _, v := range h[k] {
			// As NATS carries it: trimmed, line breaks made spaces.
			str(strings.NewReplacer("\r", " ", "\n", " ").Replace(textproto.TrimString(v)))
		}
	}
	str(string(data))
	return "v1=" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// FuzzSeal: Seal is the reference encoding's MAC, whatever the headers,
// values, body and key (two keys alternate, so that a kept HMAC is never
// used under the wrong one), and CheckSeal accepts it.
func FuzzSeal(f *testing.F) {
	f.Add("Forgehooks-Event", "issues", "nats-msg-id", "x", []byte(`{"a":1}`), false)
	f.Add("", " v", "Nats-", "", []byte{}, true)
	f.Add(HeaderNonce, "n", HeaderSeal, "s", []byte("body"), true)
	other := bytes.Repeat([]byte{9}, MinKeyLen+3)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, data []byte, otherKey bool) {
		key := testKey
		if otherKey {
			key = other
		}
		h := nats.Header{k1: {v1, v2}, k2: {v2}, "Many": make([]string, len(data)%40)}
		for i := range h["Many"] {
			h["Many"][i] = strings.Repeat("v", i)
		}
		got, want := Seal(key, h, data), referenceSeal(key, h, data)
		if got != want {
			t.Fatalf("Seal = %s, reference %s", got, want)
		}
		h = maps.Clone(h)
		delete(h, HeaderSeal)
		h.Set(HeaderSeal, got)
		if CheckSeal(key, h, data) != nil && sealed(k1) && sealed(k2) {
			t.Fatalf("CheckSeal refuses its own seal")
		}
	})
}

// BenchmarkSeal seals a delivery's ~15 headers and a 7 KB body.
func BenchmarkSeal(b *testing.B) {
	h := sealedMsg().Header
	for i := range 10 {
		h.Set(fmt.Sprintf("X-Header-%d", i), strings.Repeat("v", 20))
	}
	data := bytes.Repeat([]byte("x"), 7<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Seal(testKey, h, data)
	}
}

// BenchmarkCheckSeal checks the seal of a delivery's ~15 headers and a
// 7 KB body, as a worker does before each run.
func BenchmarkCheckSeal(b *testing.B) {
	h := sealedMsg().Header
	for i := range 10 {
		h.Set(fmt.Sprintf("X-Header-%d", i), strings.Repeat("v", 20))
	}
	data := bytes.Repeat([]byte("x"), 7<<10)
	h.Set(HeaderSeal, Seal(testKey, h, data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckSeal(testKey, h, data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseSeal: the parser takes any string without panicking, and what
// it accepts is a 32-byte MAC that encodes back to the same string.
func FuzzParseSeal(f *testing.F) {
	f.Add(Seal(testKey, nil, nil))
	f.Add("v1=")
	f.Add("v2=AAAA")
	f.Add("v1=" + strings.Repeat("A", 43))
	f.Add("v1=" + strings.Repeat("_", 42) + "=")
	f.Fuzz(func(t *testing.T, s string) {
		mac, err := ParseSeal(s)
		if err != nil {
			return
		}
		if len(mac) != 32 || "v1="+base64.RawURLEncoding.EncodeToString(mac) != s {
			t.Fatalf("ParseSeal(%q): %d bytes, not what it encodes", s, len(mac))
		}
		h := nats.Header{HeaderSeal: {s}}
		if err := CheckSeal(testKey, h, nil); err != nil && !errors.Is(err, ErrBadSeal) {
			t.Fatalf("CheckSeal of a parsed seal: %v", err)
		}
	})
}

// TestSealLen: the constant is the encoding's length of a MAC.
func TestSealLen(t *testing.T) {
	if sealLen != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		t.Fatalf("sealLen %d, the encoding's %d", sealLen, base64.RawURLEncoding.EncodedLen(sha256.Size))
	}
}

// TestCheckSealAllocs: checking a seal allocates nothing past the first
// (the kept HMAC and buffer are reused).
func TestCheckSealAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := sealedMsg()
	SetSeal(testKey, m)
	if err := CheckSeal(testKey, m.Header, m.Data); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { _ = CheckSeal(testKey, m.Header, m.Data) }); n != 0 {
		t.Errorf("CheckSeal: %v allocations", n)
	}
}
