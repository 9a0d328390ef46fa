package signing

import (
	"fmt"
	"sync"
)

// Keyring holds the secret deliveries are signed with and the additional
// secrets accepted while it is rotated, checked once when it is made. It is
// safe for concurrent use, and keeps keyed digests of the first secret for
// reuse: keying an HMAC costs two SHA-256 blocks and a few allocations.
type Keyring struct {
	secrets []string // the primary first; none empty
	digests sync.Pool
}

// NewKeyring returns a Keyring of secret and additional, tried in that order.
// Every secret must be non-empty: ErrMissingSecret otherwise, naming which
// one, so that a configuration mistake is seen rather than silently skipped.
func NewKeyring(secret string, additional ...string) (*Keyring, error) {
	if secret == "" {
		return nil, ErrMissingSecret
	}
	for i, s := range additional {
		if s == "" {
			return nil, fmt.Errorf("additional secret %d of %d is empty: %w", i+1, len(additional), ErrMissingSecret)
		}
	}
	return &Keyring{secrets: append([]string{secret}, additional...)}, nil
}

// Primary returns the first secret, the one Sign uses.
func (k *Keyring) Primary() string { return k.secrets[0] }

// Verify reports whether signature is payload's signature under any of the
// Keyring's secrets. It errs only for an empty payload (ErrMissingPayload) or
// signature (ErrMissingSignature).
func (k *Keyring) Verify(payload []byte, signature string) (bool, error) {
	if err := check(k.secrets[0], payload, signature); err != nil {
		return false, err
	}
	d := k.Digest()
	defer k.Release(d)
	d.h.Write(payload)
	return k.Match(d, payload, signature), nil
}

// Digest returns a Digest keyed with the primary secret, with nothing written,
// for a caller that hashes a payload as it arrives. Give it back with Release.
func (k *Keyring) Digest() *Digest {
	if d, ok := k.digests.Get().(*Digest); ok {
		return d
	}
	return newDigest(k.secrets[0])
}

// Release resets d, from Digest, and keeps it for reuse. d must not be used
// after.
func (k *Keyring) Release(d *Digest) {
	d.Reset()
	k.digests.Put(d)
}

// Match reports whether signature is payload's signature under any of the
// Keyring's secrets, where primary (from Digest) has been written payload
// already: the additional secrets hash payload again only when the primary
// does not match. A malformed signature is false.
func (k *Keyring) Match(primary *Digest, payload []byte, signature string) bool {
	want, ok := ParseSignature(signature)
	if !ok {
		return false
	}
	if primary.equal(&want) {
		return true
	}
	for _, s := range k.secrets[1:] {
		if write(newDigest(s), payload).equal(&want) {
			return true
		}
	}
	return false
}
