package stored

import (
	"bytes"
	"encoding/base64"
	"errors"
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
