//go:build !unix

package tenantsfile

import "os"

// openFlags open a file; the regular-file check after the open is what
// guards it here.
const openFlags = os.O_RDONLY
