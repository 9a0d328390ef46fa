//go:build !unix

package inbox

// lockDir does nothing where flock is missing: one process at a time must
// open a directory.
func lockDir(dir string) (unlock func(), err error) {
	return func() {}, nil
}
