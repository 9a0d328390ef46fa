//go:build !(linux || darwin || freebsd)

package inbox

// free cannot tell the free space here: a full disk is then noticed only
// when JetStream shuts itself down.
func (w *storeWatch) free() int64 { return 1 << 62 }
