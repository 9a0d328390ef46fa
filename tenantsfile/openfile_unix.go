//go:build unix

package tenantsfile

import (
	"os"
	"syscall"
)

// openFlags open a file without blocking when a FIFO or a device is put in
// its place; the regular-file check after the open refuses those.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
