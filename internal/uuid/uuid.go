// Package uuid makes random (version 4) UUIDs, the form of the forge's
// delivery ids, for deliveries made up by the CLI and by tests.
package uuid

import (
	"crypto/rand"
	"fmt"
)

// New returns a random version 4 UUID in its canonical form: 36 characters,
// lower-case hex in groups of 8-4-4-4-12.
func New() string {
	var b [16]byte
	rand.Read(b[:])         // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
