// Package signing computes and checks the HMAC-SHA256 signatures that the forge
// sends with each webhook delivery in its X-Hub-Signature-256 header.
//
// A signature is "sha256=" followed by the 64 lower-case hex digits of
// HMAC-SHA256(secret, payload), computed over the payload bytes exactly as
// delivered. Verify never accepts a legacy "sha1=" signature; VerifySHA1 is the
// explicit opt-in for that.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
)

// Prefix starts every signature that Sign returns and Verify accepts.
const Prefix = "sha256="

// SignatureLen is the length of a signature: the prefix and 64 hex digits.
const SignatureLen = len(Prefix) + 2*sha256.Size

var (
	// ErrMissingSecret is returned when the secret is empty.
	ErrMissingSecret = errors.New("signing: secret is required")
	// ErrMissingPayload is returned when the payload is empty.
	ErrMissingPayload = errors.New("signing: payload is required")
	// ErrMissingSignature is returned when the signature to check is empty.
	ErrMissingSignature = errors.New("signing: signature is required")
)

// Sign returns the signature of payload under secret: "sha256=" and 64 lower-case
// hex digits. It fails with ErrMissingSecret or ErrMissingPayload when either is
// empty.
func Sign(secret string, payload []byte) (string, error) {
	if secret == "" {
		return "", ErrMissingSecret
	}
	if len(payload) == 0 {
		return "", ErrMissingPayload
	}
	d := newDigest(secret)
	d.h.Write(payload)
	return d.Signature(), nil
}

// Verify reports whether signature is the signature of payload under secret.
//
// It returns an error only when secret, payload or signature is empty
// (ErrMissingSecret, ErrMissingPayload, ErrMissingSignature). A signature of the
// wrong length, without the "sha256=" prefix, with upper-case or non-hex digits
// is simply false. The digests are compared in constant time.
func Verify(secret string, payload []byte, signature string) (bool, error) {
	if err := check(secret, payload, signature); err != nil {
		return false, err
	}
	want, ok := ParseSignature(signature)
	if !ok {
		return false, nil
	}
	d := newDigest(secret)
	d.h.Write(payload)
	return d.equal(&want), nil
}

// VerifyWithFallback is Verify for a secret being rotated: it tries secret first,
// then each additional secret in order, and reports whether any of them matches.
// Every secret must be non-empty (ErrMissingSecret otherwise, naming which one),
// so that a configuration mistake is seen rather than silently skipped.
func VerifyWithFallback(secret string, payload []byte, signature string, additional ...string) (bool, error) {
	if err := check(secret, payload, signature); err != nil {
		return false, err
	}
	for i, s := range additional {
		if s == "" {
			return false, fmt.Errorf("additional secret %d of %d is empty: %w", i+1, len(additional), ErrMissingSecret)
		}
	}
	want, ok := ParseSignature(signature)
	if !ok {
		return false, nil
	}
	if write(newDigest(secret), payload).equal(&want) {
		return true, nil
	}
	for _, s := range additional {
		if write(newDigest(s), payload).equal(&want) {
			return true, nil
		}
	}
	return false, nil
}

func write(d *Digest, p []byte) *Digest {
	d.h.Write(p)
	return d
}

func check(secret string, payload []byte, signature string) error {
	switch {
	case secret == "":
		return ErrMissingSecret
	case len(payload) == 0:
		return ErrMissingPayload
	case signature == "":
		return ErrMissingSignature
	}
	return nil
}

// ParseSignature decodes a "sha256=" signature into its 32-byte digest. It accepts
// exactly the form Sign produces (lower-case hex) and reports false for anything
// else. It does not allocate, and it looks at every digit before answering, so
// its time does not depend on where a bad digit is.
func ParseSignature(signature string) (digest [sha256.Size]byte, ok bool) {
	if len(signature) != SignatureLen || signature[:len(Prefix)] != Prefix {
		return digest, false
	}
	return digest, decodeHex(digest[:], signature[len(Prefix):])
}

// decodeHex decodes lower-case hex; len(src) must be 2*len(dst). It accumulates
// an invalid flag instead of returning at the first bad digit.
func decodeHex(dst []byte, src string) bool {
	var bad byte
	for i := range dst {
		hi, b1 := fromHex(src[2*i])
		lo, b2 := fromHex(src[2*i+1])
		dst[i] = hi<<4 | lo
		bad |= b1 | b2
	}
	return bad == 0
}

// fromHex maps a lower-case hex digit to its value, and returns a non-zero bad
// flag for any other byte. A table keeps it branch-free.
func fromHex(c byte) (v, bad byte) {
	v = hexTable[c]
	return v & 0x0f, v >> 7
}

// hexTable holds each lower-case hex digit's value, and 0x80 for every other byte.
var hexTable = func() (t [256]byte) {
	for i := range t {
		t[i] = 0x80
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

// Digest computes a signature incrementally: write the payload to it as it
// arrives (it is an io.Writer), then call Match or Signature. The HTTP middleware
// uses it to hash a body while reading it, so that the body is never read twice.
// A Digest is not safe for concurrent use.
type Digest struct {
	h   hash.Hash
	sum [sha256.Size]byte // where equal sums
}

// NewDigest returns a Digest keyed with secret, or ErrMissingSecret.
func NewDigest(secret string) (*Digest, error) {
	if secret == "" {
		return nil, ErrMissingSecret
	}
	return newDigest(secret), nil
}

func newDigest(secret string) *Digest {
	return &Digest{h: hmac.New(sha256.New, []byte(secret))}
}

// Write adds p to the signed payload. It never fails.
func (d *Digest) Write(p []byte) (int, error) {
	return d.h.Write(p)
}

// Reset forgets what has been written, keeping the key, so that the Digest can
// check another payload without keying a new one (which costs two SHA-256 blocks
// and a few allocations).
func (d *Digest) Reset() { d.h.Reset() }

// Match reports whether signature (in Sign's form) is the signature of what has
// been written so far. Malformed signatures are false. The digests are compared
// in constant time. Match does not change the Digest; more may be written after.
func (d *Digest) Match(signature string) bool {
	want, ok := ParseSignature(signature)
	return ok && d.equal(&want)
}

// MatchDigest is Match for a signature already decoded by ParseSignature, for a
// caller that checks one signature against several secrets.
func (d *Digest) MatchDigest(want [sha256.Size]byte) bool {
	return d.equal(&want)
}

// Signature returns the signature of what has been written so far, as Sign does.
func (d *Digest) Signature() string {
	var sum [sha256.Size]byte
	var out [SignatureLen]byte
	copy(out[:], Prefix)
	hex.Encode(out[len(Prefix):], d.h.Sum(sum[:0]))
	return string(out[:])
}

func (d *Digest) equal(want *[sha256.Size]byte) bool {
	// Summed into the Digest, not the stack: through the hash.Hash interface
	// a local array would escape, one allocation per check.
	return hmac.Equal(d.h.Sum(d.sum[:0]), want[:])
}
