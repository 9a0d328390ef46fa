package recstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// OpenRegular opens path for reading only when it is a regular file (not a
// link, a FIFO, a device nor a directory) of at most maxSize bytes: a state
// file someone replaced must neither hang a start nor make it read for
// long. The error wraps fs.ErrNotExist when there is no file, and
// ErrNotRegular or ErrTooLarge when it is refused.
func OpenRegular(path string, maxSize int64) (*os.File, fs.FileInfo, error) {
	// Lstat first: opening a FIFO or a device may have effects, and
	// O_NOFOLLOW is not on every system.
	st, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w (%v)", path, ErrNotRegular, st.Mode().Type())
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	// The file may have been replaced between the two looks: what counts
	// is the one opened.
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	switch {
	case !st.Mode().IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%v)", path, ErrNotRegular, st.Mode().Type())
	case st.Size() > maxSize:
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w: %d bytes, at most %d expected", path, ErrTooLarge, st.Size(), maxSize)
	}
	return f, st, nil
}

// Errors of OpenRegular.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than it can be")
)

// RemoveTemporary removes the temporary files that a write of file cut
// short (a kill) left beside it (atomicfile's ".<name>.*.tmp"), and returns
// how many. Call it only while no one writes file (under the directory's
// lock).
func RemoveTemporary(file string) (int, error) {
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(file), "."+globEscape(filepath.Base(file))+".*.tmp"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range matches {
		if err := os.Remove(m); err == nil {
			n++
		} else if !os.IsNotExist(err) {
			return n, err
		}
	}
	return n, nil
}

// globEscape escapes the characters filepath.Match treats specially.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
