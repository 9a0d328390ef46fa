//go:build linux || darwin || freebsd

package inbox

import "syscall"

// free returns the bytes free on the store's disk; a large number when it
// cannot tell.
func (w *storeWatch) free() int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(w.dir, &st); err != nil {
		return 1 << 62
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
