//go:build unix

package inbox

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir, so that two processes never run a
// server on one store; the lock goes with the process.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "forgehooks-inbox.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s (is 'forgehooks serve' running on it? the inbox command reaches it through its admin socket)", ErrInUse, dir)
	}
	return func() { f.Close() }, nil
}
