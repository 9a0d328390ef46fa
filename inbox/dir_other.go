//go:build !unix

package inbox

import (
	"fmt"
	"os"
)

// checkDir checks that dir is a directory; ownership and modes are Unix's
// (see dir_unix.go).
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("inbox: %s is not a directory", dir)
	}
	return nil
}

// checkSocket checks that path is a socket.
func checkSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket", ErrUnsafeDir, path)
	}
	return nil
}
