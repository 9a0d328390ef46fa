package stored

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// HeaderSeal holds a stored message's seal: an HMAC-SHA256, with the
// inbox's key, over its body and headers (see Seal). Only a holder of the
// key (a receiver, a worker) can write a message that runs.
const HeaderSeal = "Forgehooks-Seal"

// MinKeyLen is the shortest inbox key accepted: 256 bits, the HMAC's size.
const MinKeyLen = 32

// sealPrefix versions the seal's encoding, so that a later scheme can be
// told from this one.
//
// The MAC covers the body itself, not the SHA-256 digest that the replay
// guard takes of it anyway: that would spare one pass over the body at
// ingest (about 4 µs of a 7 KB delivery's ~200), but a second form is a bad
// seal to the workers of an earlier version, which in a cluster being
// upgraded one process at a time would bury the deliveries so sealed as
// dead letters; and the check before a run hashes the body once either way.
const sealPrefix = "v1="

// Errors of CheckSeal. ErrUnsealed: the message carries no seal;
// ErrBadSeal: it carries one that is malformed or not the key's over
// this body and these headers.
var (
	ErrUnsealed = errors.New("unsealed: the message carries no " + HeaderSeal + " header (not written by a receiver holding the inbox key)")
	ErrBadSeal  = errors.New("bad seal: the " + HeaderSeal + " header does not match the message under the inbox key (forged, altered, or sealed with another key)")
)

// sealed reports whether the header named k is covered by the seal: every
// header but the server's own (Nats-*, which JetStream adds or reads), the
// seal itself and the publish nonce (set per publish attempt, after the
// seal, and never read by a handler).
func sealed(k string) bool {
	return k != HeaderSeal && k != HeaderNonce && !hasPrefixFold(k, "nats-")
}

// Seal returns the seal of a message with headers h and body data under
// key: "v1=" and the base64url HMAC-SHA256 of a canonical encoding. The
// encoding is length-prefixed (so no two messages encode alike): the number
// of covered headers, then each name (sorted by bytes) with its values in
// order, each string as a 4-byte big-endian length and its bytes, then the
// body the same way. What NATS does not carry is left out: an empty name,
// a name without a value; values are covered as NATS carries them (Carried:
// trimmed, line breaks made spaces), so that a value it changes on the way
// does not break the seal.
func Seal(key []byte, h nats.Header, data []byte) string {
	mac := sealMAC(key, h, data)
	b := encodeSeal(mac)
	return string(b[:])
}

// encodeSeal writes mac as Seal does, into an array (no allocation).
func encodeSeal(mac [sha256.Size]byte) (b [len(sealPrefix) + sealLen]byte) {
	copy(b[:], sealPrefix)
	base64.RawURLEncoding.Encode(b[len(sealPrefix):], mac[:])
	return b
}

// sealer is an HMAC under one key and a buffer for the headers' encoding,
// kept between seals: a seal is computed twice per delivery (stored, then
// checked before it runs), and a new HMAC and the hash's many small writes
// cost about as much as hashing a 7 KB body.
type sealer struct {
	key []byte
	mac hash.Hash
	buf []byte
	sum []byte
}

var sealers sync.Pool

// sealMAC is the MAC that Seal encodes. The headers' encoding is built in
// one buffer and hashed with one write, then the body.
func sealMAC(key []byte, h nats.Header, data []byte) [sha256.Size]byte {
	s, _ := sealers.Get().(*sealer)
	if s == nil || !bytes.Equal(s.key, key) {
		s = &sealer{key: bytes.Clone(key), mac: hmac.New(sha256.New, key)}
	} else {
		s.mac.Reset()
	}
	var stack [24]string
	names := stack[:0]
	for k, v := range h {
		if k != "" && sealed(k) && len(v) > 0 {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	b := appendLen(s.buf[:0], len(names))
	for _, k := range names {
		b = appendString(b, k)
		b = appendLen(b, len(h[k]))
		for _, v := range h[k] {
			b = appendString(b, Carried(v))
		}
	}
	b = appendLen(b, len(data))
	s.mac.Write(b)
	s.mac.Write(data)
	// Summed into the sealer's own bytes: a local array handed to the
	// interface's Sum would be allocated.
	s.sum = s.mac.Sum(s.sum[:0])
	sum := [sha256.Size]byte(s.sum)
	if cap(b) <= 64<<10 {
		s.buf = b
		sealers.Put(s)
	}
	return sum
}

func appendLen(b []byte, n int) []byte { return binary.BigEndian.AppendUint32(b, uint32(n)) }

func appendString(b []byte, s string) []byte { return append(appendLen(b, len(s)), s...) }

// ParseSeal decodes a seal as Seal writes it into its MAC; an error when s
// is not one (no "v1=" prefix, not base64url, not 32 bytes).
func ParseSeal(s string) ([]byte, error) {
	mac, err := parseSeal(s)
	if err != nil {
		return nil, err
	}
	return mac[:], nil
}

// parseSeal is ParseSeal into an array.
func parseSeal(s string) (mac [sha256.Size]byte, err error) {
	rest, ok := strings.CutPrefix(s, sealPrefix)
	if !ok {
		return mac, errors.New("no " + sealPrefix + " prefix")
	}
	var src [sealLen]byte
	if len(rest) != len(src) {
		return mac, errors.New("not a SHA-256 MAC's length")
	}
	copy(src[:], rest)
	// The decoder skips line breaks, which leaves fewer than 32 bytes from
	// 43 characters, and Strict refuses stray bits in the last one: only
	// the one encoding is a seal.
	n, err := base64.RawURLEncoding.Strict().Decode(mac[:], src[:])
	if err != nil || n != len(mac) {
		return mac, errors.New("not base64url")
	}
	return mac, nil
}

// sealLen is the length of a seal's base64url MAC, unpadded: six bits a
// character (base64.RawURLEncoding.EncodedLen, as a constant).
const sealLen = (sha256.Size*8 + 5) / 6

// SetSeal seals the message with key: its HeaderSeal is set to Seal's
// value over its headers and body as they are now. Every header must be
// final; a change after it breaks the seal.
func SetSeal(key []byte, msg *nats.Msg) {
	msg.Header.Del(HeaderSeal)
	msg.Header.Set(HeaderSeal, Seal(key, msg.Header, msg.Data))
}

// CheckSeal returns nil when h carries exactly one seal, and it is key's
// over h and data; ErrUnsealed or ErrBadSeal (wrapped, with why) when not.
// The comparison takes the same time whatever the MAC.
func CheckSeal(key []byte, h nats.Header, data []byte) error {
	vals := h[HeaderSeal]
	switch len(vals) {
	case 0:
		return ErrUnsealed
	case 1:
	default:
		return errors.Join(ErrBadSeal, errors.New("more than one seal"))
	}
	// A seal holds when it is exactly what Seal writes: compared as text,
	// which ParseSeal's decoding and encoding back would allow no other way.
	want := encodeSeal(sealMAC(key, h, data))
	if equalSeal(vals[0], &want) {
		return nil
	}
	if _, err := ParseSeal(vals[0]); err != nil {
		return errors.Join(ErrBadSeal, err)
	}
	return ErrBadSeal
}

// equalSeal reports whether s is want, in a time that depends on their
// lengths only (a seal's is public).
func equalSeal(s string, want *[len(sealPrefix) + sealLen]byte) bool {
	if len(s) != len(want) {
		return false
	}
	var diff byte
	for i := range want {
		diff |= s[i] ^ want[i]
	}
	return diff == 0
}
