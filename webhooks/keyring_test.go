package webhooks

import (
	"errors"
	"testing"

	"forgehooks.dev/forgehooks/signing"
)

// TestKeyring: the empty-secret check happens once, in newKeyring; verify and
// match try every secret in order, Match over a primary digest written as the
// payload arrived.
func TestKeyring(t *testing.T) {
	if _, err := newKeyring(""); !errors.Is(err, signing.ErrMissingSecret) {
		t.Errorf("newKeyring(\"\") = %v", err)
	}
	if _, err := newKeyring("new", "old", ""); !errors.Is(err, signing.ErrMissingSecret) || err.Error() != "additional secret 2 of 2 is empty: signing: secret is required" {
		t.Errorf("newKeyring with an empty additional secret = %v", err)
	}
	k, err := newKeyring("new", "old", "older")
	if err != nil {
		t.Fatal(err)
	}
	if k.primary() != "new" {
		t.Errorf("Primary = %q", k.primary())
	}
	payload := []byte(`{"action":"opened"}`)
	sig := func(secret string) string {
		s, err := signing.Sign(secret, payload)
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
			ok, err := k.verify(payload, tt.signature)
			if err != nil || ok != tt.want {
				t.Errorf("Verify = %v, %v; want %v", ok, err, tt.want)
			}
			d := k.digest()
			d.Write(payload[:5])
			d.Write(payload[5:])
			if got := k.match(d, payload, tt.signature); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
			k.release(d)
			// A released digest starts clean.
			d = k.digest()
			d.Write(payload)
			if got := k.match(d, payload, tt.signature); got != tt.want {
				t.Errorf("Match after Release = %v, want %v", got, tt.want)
			}
			k.release(d)
		})
	}
	if _, err := k.verify(nil, sig("new")); !errors.Is(err, signing.ErrMissingPayload) {
		t.Errorf("Verify(nil) = %v", err)
	}
	if _, err := k.verify(payload, ""); !errors.Is(err, signing.ErrMissingSignature) {
		t.Errorf("Verify(no signature) = %v", err)
	}
}

// FuzzKeyringMatch: the keyring's pooled digest, written in two pieces, and
// its match over both secrets agree with signing.VerifyWithFallback.
func FuzzKeyringMatch(f *testing.F) {
	f.Add("new", "old", []byte(`{"action":"opened"}`), uint8(1), "", 5)
	f.Add("new", "old", []byte(`{}`), uint8(3), "sha256=00", 0)
	f.Fuzz(func(t *testing.T, secret, old string, payload []byte, mode uint8, given string, split int) {
		if secret == "" || old == "" || len(payload) == 0 {
			return
		}
		signature := given
		switch mode % 4 {
		case 0:
			signature, _ = signing.Sign(secret, payload)
		case 1:
			signature, _ = signing.Sign(old, payload)
		case 2:
			signature, _ = signing.Sign("neither", payload)
		}
		if signature == "" {
			return
		}
		want, err := signing.VerifyWithFallback(secret, payload, signature, old)
		if err != nil {
			t.Fatal(err)
		}
		k, err := newKeyring(secret, old)
		if err != nil {
			t.Fatal(err)
		}
		split = min(max(split, 0), len(payload))
		d := k.digest()
		d.Write(payload[:split])
		d.Write(payload[split:])
		if k.match(d, payload, signature) != want {
			t.Fatalf("keyring.match disagrees with VerifyWithFallback for %q", signature)
		}
		k.release(d)
		if ok, err := k.verify(payload, signature); err != nil || ok != want {
			t.Fatalf("keyring.verify = %v, %v; want %v", ok, err, want)
		}
	})
}
