//go:build unix

package inbox

import (
	"fmt"
	"os"
	"syscall"
)

// checkDir refuses an inbox directory that another user could change:
// whoever can write to it can remove the lock file (and run a second server
// on the same store), or plant an admin socket or files of their own. It
// must belong to this process's user and not be writable by group or
// others. It is refused rather than fixed: a chmod or chown would hide that
// someone else could have been in it already.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("inbox: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to user %d, not to this process's user %d: run as its owner, or use a directory of your own",
			ErrUnsafeDir, dir, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by its group or others (mode %04o); make it private: chmod 700 %s",
			ErrUnsafeDir, dir, perm, dir)
	}
	return nil
}

// checkSocket checks that the admin socket at path was made by this
// process's user, for no one else: a socket another user planted would
// answer with rows (and answers of any size) of their choosing.
func checkSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket", ErrUnsafeDir, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: the admin socket %s belongs to user %d, not to this process's user %d", ErrUnsafeDir, path, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: the admin socket %s is open to its group or others (mode %04o)", ErrUnsafeDir, path, perm)
	}
	return nil
}
