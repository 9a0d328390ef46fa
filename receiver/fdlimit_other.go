//go:build !unix

package receiver

// fdLimit reports no descriptor limit where the system has none that a
// process can read.
func fdLimit() (uint64, bool) { return 0, false }
