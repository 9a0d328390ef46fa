package signing

import (
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// FuzzVerify checks that Verify never panics, errs only on empty arguments, and
// accepts a signature exactly when it is Sign's answer.
func FuzzVerify(f *testing.F) {
	f.Add("mysecret", []byte(`{"foo":"bar"}`), knownAnswer)
	f.Add("mysecret", []byte(`{"foo":"bar"}`), "sha256=")
	f.Add("", []byte(`x`), "sha256=zz")
	f.Add("s", []byte{}, "")
	for i, ex := range corpus.All() {
		if i%25 == 0 { // a spread of real bodies, not all of them
			sig, _ := Sign("mysecret", ex.Body)
			f.Add("mysecret", ex.Body, sig)
		}
	}
	f.Fuzz(func(t *testing.T, secret string, payload []byte, signature string) {
		ok, err := Verify(secret, payload, signature)
		missing := secret == "" || len(payload) == 0 || signature == ""
		if (err != nil) != missing {
			t.Fatalf("err = %v with secret %q, %d-byte payload, signature %q", err, secret, len(payload), signature)
		}
		if missing {
			return
		}
		want, _ := Sign(secret, payload)
		if ok != (signature == want) {
			t.Fatalf("Verify = %v for signature %q, Sign gives %q", ok, signature, want)
		}
		if !ok {
			if ok, _ := Verify(secret, payload, want); !ok {
				t.Fatal("Sign's own signature does not verify")
			}
		}
	})
}
