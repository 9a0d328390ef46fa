package signing

import (
	"crypto/hmac"
	"crypto/sha1"
)

// PrefixSHA1 starts a legacy signature, as sent in the X-Hub-Signature header.
const PrefixSHA1 = "sha1="

// VerifySHA1 verifies a legacy "sha1=" signature (HMAC-SHA1, 40 lower-case hex
// digits), such as older webhook proxies forward in the X-Hub-Signature header.
//
// It is an explicit opt-in: Verify, VerifyWithFallback and package webhooks never
// accept SHA-1 signatures. Call VerifySHA1 only where a sender cannot provide a
// "sha256=" signature. Errors and the false cases are as for Verify.
func VerifySHA1(secret string, payload []byte, signature string) (bool, error) {
	if err := check(secret, payload, signature); err != nil {
		return false, err
	}
	const n = len(PrefixSHA1) + 2*sha1.Size
	if len(signature) != n || signature[:len(PrefixSHA1)] != PrefixSHA1 {
		return false, nil
	}
	var want [sha1.Size]byte
	if !decodeHex(want[:], signature[len(PrefixSHA1):]) {
		return false, nil
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(payload)
	var sum [sha1.Size]byte
	return hmac.Equal(mac.Sum(sum[:0]), want[:]), nil
}
