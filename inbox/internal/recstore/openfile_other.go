//go:build !unix

package recstore

import "os"

// openFlags open a state file; the regular-file check after the open is
// what guards it here.
const openFlags = os.O_RDONLY
