//go:build unix

package receiver

import "syscall"

// fdLimit returns the process's limit of open file descriptors
// (RLIMIT_NOFILE's soft limit, which the Go runtime raises to the hard one
// at start), false when it cannot be read or is unlimited.
func fdLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	cur := uint64(rl.Cur)
	if cur == 0 || cur >= 1<<40 {
		return 0, false
	}
	return cur, true
}
