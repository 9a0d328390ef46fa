package signing

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/json"
	"fmt"
)

// VerifyValue verifies a signature against a value that is not the raw payload:
// v is re-encoded as JSON and the encoding is checked. A string, []byte or
// json.RawMessage is used as it is, as Verify would.
//
// Deprecated: this is the original library's "Object" form and it is lossy. The
// forge signs the exact bytes it sent; decoding and re-encoding them changes key
// order, white space, number spelling and escapes, so a genuine delivery often
// fails to verify. Keep the raw body and call Verify.
func VerifyValue(secret string, v any, signature string) (bool, error) {
	switch p := v.(type) {
	case string:
		return Verify(secret, []byte(p), signature)
	case []byte:
		return Verify(secret, p, signature)
	case json.RawMessage:
		return Verify(secret, p, signature)
	case nil:
		return false, ErrMissingPayload
	}
	// JSON.stringify does not escape <, > and &; json.Marshal would.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return false, fmt.Errorf("signing: encode value to verify: %w", err)
	}
	return Verify(secret, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), signature)
}

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
