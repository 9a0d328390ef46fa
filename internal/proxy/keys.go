package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"forgehooks.dev/forgehooks/internal/atomicfile"
)

// The Server's key authenticates what it hands out, so that it needs no state
// to recognise it: the channel names of /new, the read tokens of channels that
// have one, and event ids. Without a journal the key lives in memory and dies
// with the process (with the names, tokens and ids made under it); with one, it
// is kept in the journal directory, so that they survive a restart.
const keyFile = "proxy.key"

// Lengths of the random part of a channel name and of its tag; both are
// base32, 5 bits a character.
const (
	nameRandLen = 12
	nameTagLen  = 12
	tokenLen    = 26 // 130 bits
	eventTagLen = 13 // 65 bits
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// newKey returns a random key.
func newKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// loadKey reads the key kept in dir, creating it first when there is none.
func loadKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, keyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k := newKey()
		if err := atomicfile.Write(path, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("proxy: key: %w", err)
		}
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("proxy: key: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("%w: %s does not hold 64 hex digits; remove it to start with a new key (channel URLs and event ids of before are then unknown)", ErrJournal, path)
	}
	return k, nil
}

// mac returns the first n base32 characters of the HMAC of parts under key.
func mac(key []byte, n int, parts ...string) string {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return b32.EncodeToString(h.Sum(nil))[:n]
}

// Kinds of issued channel names: the tag says whether the channel needs a
// read token to subscribe.
const (
	kindOpen  = "open"
	kindToken = "token"
)

// issueName returns a new channel name: a random part and its tag, which says
// (under the key) that this proxy made it and whether it has a read token.
func issueName(key []byte, withToken bool) string {
	r := rand.Text()[:nameRandLen]
	kind := kindOpen
	if withToken {
		kind = kindToken
	}
	return r + mac(key, nameTagLen, "channel", kind, r)
}

// issuedName reports whether name was made by issueName under key, and if so
// whether it has a read token.
func issuedName(key []byte, name string) (issued, withToken bool) {
	if len(name) != nameRandLen+nameTagLen {
		return false, false
	}
	r, tag := name[:nameRandLen], name[nameRandLen:]
	switch {
	case hmac.Equal([]byte(tag), []byte(mac(key, nameTagLen, "channel", kindOpen, r))):
		return true, false
	case hmac.Equal([]byte(tag), []byte(mac(key, nameTagLen, "channel", kindToken, r))):
		return true, true
	}
	return false, false
}

// readToken returns the read token of channel name.
func readToken(key []byte, name string) string {
	return mac(key, tokenLen, "read", name)
}

// eventID returns the id of delivery seq of a channel in epoch.
func eventID(key []byte, name, epoch string, seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	return epoch + "-" + s + "-" + mac(key, eventTagLen, "event", name, epoch, s)
}

// parseEventID returns the seq of id when it is an id eventID made for this
// channel and epoch under key.
func parseEventID(key []byte, name, epoch, id string) (seq uint64, ok bool) {
	e, rest, ok1 := strings.Cut(id, "-")
	s, tag, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || e != epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != s {
		return 0, false
	}
	if !hmac.Equal([]byte(tag), []byte(mac(key, eventTagLen, "event", name, epoch, s))) {
		return 0, false
	}
	return seq, true
}
