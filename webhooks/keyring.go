package webhooks

import (
	"fmt"
	"sync"

	"forgehooks.dev/forgehooks/signing"
)

// keyring holds the secret deliveries are signed with and the additional
// secrets accepted while it is rotated, checked once when it is made. It is
// safe for concurrent use, and keeps keyed digests of the first secret for
// reuse: keying an HMAC costs two SHA-256 blocks and a few allocations.
type keyring struct {
	secrets []string // the primary first; none empty
	digests sync.Pool
}

// newKeyring returns a keyring of secret and additional, tried in that order.
// Every secret must be non-empty: signing.ErrMissingSecret otherwise, naming
// which one, so that a configuration mistake is seen rather than silently
// skipped.
func newKeyring(secret string, additional ...string) (*keyring, error) {
	if secret == "" {
		return nil, signing.ErrMissingSecret
	}
	for i, s := range additional {
		if s == "" {
			return nil, fmt.Errorf("additional secret %d of %d is empty: %w", i+1, len(additional), signing.ErrMissingSecret)
		}
	}
	return &keyring{secrets: append([]string{secret}, additional...)}, nil
}

// primary returns the first secret, the one Sign uses; "" when there is none
// (a Webhooks whose tenants have the secrets).
func (k *keyring) primary() string {
	if len(k.secrets) == 0 {
		return ""
	}
	return k.secrets[0]
}

// verify reports whether signature is payload's signature under any of the
// secrets. It errs only for an empty payload (signing.ErrMissingPayload) or
// signature (signing.ErrMissingSignature).
func (k *keyring) verify(payload []byte, signature string) (bool, error) {
	switch {
	case len(payload) == 0:
		return false, signing.ErrMissingPayload
	case signature == "":
		return false, signing.ErrMissingSignature
	case len(k.secrets) == 0:
		return false, signing.ErrMissingSecret
	}
	d := k.digest()
	defer k.release(d)
	d.Write(payload)
	return k.match(d, payload, signature), nil
}

// digest returns a signing.Digest keyed with the primary secret, with nothing
// written, for a caller that hashes a payload as it arrives. Give it back
// with release.
func (k *keyring) digest() *signing.Digest {
	if d, ok := k.digests.Get().(*signing.Digest); ok {
		return d
	}
	d, _ := signing.NewDigest(k.secrets[0]) // not empty: checked by newKeyring
	return d
}

// release resets d, from digest, and keeps it for reuse. d must not be used
// after.
func (k *keyring) release(d *signing.Digest) {
	d.Reset()
	k.digests.Put(d)
}

// match reports whether signature is payload's signature under any of the
// secrets, where primary (from digest) has been written payload already: the
// additional secrets hash payload again only when the primary does not match.
// A malformed signature is false.
func (k *keyring) match(primary *signing.Digest, payload []byte, signature string) bool {
	want, ok := signing.ParseSignature(signature)
	if !ok {
		return false
	}
	if primary.MatchDigest(want) {
		return true
	}
	for _, s := range k.secrets[1:] {
		d, _ := signing.NewDigest(s)
		d.Write(payload)
		if d.MatchDigest(want) {
			return true
		}
	}
	return false
}
