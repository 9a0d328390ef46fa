package signing

import (
	"errors"
	"testing"
)

// TestKeyring: the empty-secret check happens once, in NewKeyring; Verify and
// Match try every secret in order, Match over a primary digest written as the
// payload arrived.
func TestKeyring(t *testing.T) {
	if _, err := NewKeyring(""); !errors.Is(err, ErrMissingSecret) {
		t.Errorf("NewKeyring(\"\") = %v", err)
	}
	if _, err := NewKeyring("new", "old", ""); !errors.Is(err, ErrMissingSecret) || err.Error() != "additional secret 2 of 2 is empty: signing: secret is required" {
		t.Errorf("NewKeyring with an empty additional secret = %v", err)
	}
	k, err := NewKeyring("new", "old", "older")
	if err != nil {
		t.Fatal(err)
	}
	if k.Primary() != "new" {
		t.Errorf("Primary = %q", k.Primary())
	}
	payload := []byte(`{"action":"opened"}`)
	sig := func(secret string) string {
		s, err := Sign(secret, payload)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name      string
		signature string
		want      bool
	}{
		{"primary", sig("new"), true},
		{"first additional", sig("old"), true},
		{"last additional", sig("older"), true},
		{"another secret", sig("other"), false},
		{"malformed", "sha256=xyz", false},
		{"sha1", "sha1=0123456789abcdef0123456789abcdef01234567", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := k.Verify(payload, tt.signature)
			if err != nil || ok != tt.want {
				t.Errorf("Verify = %v, %v; want %v", ok, err, tt.want)
			}
			d := k.Digest()
			d.Write(payload[:5])
			d.Write(payload[5:])
			if got := k.Match(d, payload, tt.signature); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
			k.Release(d)
			// A released digest starts clean.
			d = k.Digest()
			d.Write(payload)
			if got := k.Match(d, payload, tt.signature); got != tt.want {
				t.Errorf("Match after Release = %v, want %v", got, tt.want)
			}
			k.Release(d)
		})
	}
	if _, err := k.Verify(nil, sig("new")); !errors.Is(err, ErrMissingPayload) {
		t.Errorf("Verify(nil) = %v", err)
	}
	if _, err := k.Verify(payload, ""); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("Verify(no signature) = %v", err)
	}
}
