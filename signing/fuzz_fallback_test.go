package signing

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// FuzzVerifyWithFallback checks the rotation verifier against Sign: it never
// panics, errs only on an empty argument or an empty additional secret, and
// accepts a signature exactly when it is Sign's answer under the primary or
// the additional secret. The incremental Digest, fed the payload in two
// pieces, agrees.
func FuzzVerifyWithFallback(f *testing.F) {
	f.Add("new", "old", []byte(`{"action":"opened"}`), uint8(1), "", 5)
	f.Add("new", "", []byte(`{}`), uint8(0), "", 1)
	f.Add("new", "old", []byte(`{}`), uint8(3), "sha256=00", 0)
	for i, ex := range corpus.All() {
		if i%50 == 0 {
			f.Add("new", "old", ex.Body, uint8(i%3), "", len(ex.Body)/2)
		}
	}
	f.Fuzz(func(t *testing.T, secret, old string, payload []byte, mode uint8, given string, split int) {
		signature := given
		switch mode % 4 {
		case 0:
			signature, _ = Sign(secret, payload)
		case 1:
			signature, _ = Sign(old, payload)
		case 2:
			signature, _ = Sign("neither", payload)
		}
		ok, err := VerifyWithFallback(secret, payload, signature, old)
		bad := secret == "" || len(payload) == 0 || signature == "" || old == ""
		if (err != nil) != bad {
			t.Fatalf("err = %v for secret %q, old %q, %d-byte payload, signature %q", err, secret, old, len(payload), signature)
		}
		if bad {
			if ok {
				t.Fatal("ok with an error")
			}
			return
		}
		byNew, _ := Sign(secret, payload)
		byOld, _ := Sign(old, payload)
		if want := signature == byNew || signature == byOld; ok != want {
			t.Fatalf("VerifyWithFallback = %v for %q, want %v", ok, signature, want)
		}

		// The Digest, written in two pieces, matches exactly Sign's answer.
		d, err := NewDigest(secret)
		if err != nil {
			t.Fatal(err)
		}
		split = min(max(split, 0), len(payload))
		d.Write(payload[:split])
		d.Write(payload[split:])
		if d.Match(signature) != (signature == byNew) || d.Signature() != byNew {
			t.Fatalf("Digest disagrees with Sign for %q", signature)
		}

	})
}

// FuzzVerifySHA1 checks the legacy opt-in against HMAC-SHA1 computed here: it
// accepts exactly "sha1=" and the 40 lower-case hex digits of the HMAC.
func FuzzVerifySHA1(f *testing.F) {
	mac := func(secret string, p []byte) string {
		m := hmac.New(sha1.New, []byte(secret))
		m.Write(p)
		return PrefixSHA1 + hex.EncodeToString(m.Sum(nil))
	}
	f.Add("s", []byte(`{}`), mac("s", []byte(`{}`)))
	f.Add("s", []byte(`{}`), "sha1="+string(bytes.Repeat([]byte("A"), 40)))
	f.Add("s", []byte(`{}`), "sha256=00")
	f.Fuzz(func(t *testing.T, secret string, payload []byte, signature string) {
		ok, err := VerifySHA1(secret, payload, signature)
		missing := secret == "" || len(payload) == 0 || signature == ""
		if (err != nil) != missing {
			t.Fatalf("err = %v", err)
		}
		if missing {
			return
		}
		if want := mac(secret, payload); ok != (signature == want) {
			t.Fatalf("VerifySHA1 = %v for %q, want %v", ok, signature, !ok)
		}
	})
}
