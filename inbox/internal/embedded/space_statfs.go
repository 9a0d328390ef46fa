//go:build linux || darwin || freebsd

package embedded

import "syscall"

// space returns the bytes free (for this user) and the size of the disk of
// dir; a large free and a zero size when it cannot tell.
func space(dir string) (free, size int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 1 << 62, 0
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize)
}
