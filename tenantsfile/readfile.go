package tenantsfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by the error for a tenants file, or a file a
// reference names, that is not a regular file (a FIFO, a device, a
// directory): reading one could block for ever or never end.
var ErrNotRegular = errors.New("not a regular file")

// readRegular reads the whole regular file at path, of at most max bytes,
// without ever blocking on its open: the file is opened non-blocking and
// checked after the open (what counts is the file opened, not one looked at
// before).
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, typeName(st.Mode()))
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, at most %d", path, st.Size(), max)
	}
	// The file may grow while it is read: the bound holds whatever happens.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes", path, max)
	}
	return b, nil
}

// typeName names what a file that is not a regular file is.
func typeName(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.Type().String()
}
