//go:build unix

package recstore

import (
	"os"
	"syscall"
)

// openFlags open a state file without following a link in its last
// component nor blocking on a FIFO put in its place.
const openFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
