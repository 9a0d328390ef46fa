// Package atomicfile replaces files so that a crash or a failed write leaves
// either the old content or the new, whole, never a part of either: the data
// is written to a temporary file beside the destination, synced, and renamed
// over it, and the directory is synced so that the rename lasts.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with data, atomically; a new file gets mode perm. The
// errors are the os package's, which name the file.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Pending is a file written beside its destination and not yet in place:
// for a caller that replaces several files and moves none of them until all
// are written.
type Pending struct {
	tmp, path string
}

// Prepare writes data, with mode perm, to a temporary file in path's
// directory and syncs it; Commit puts it in place, Discard removes it. On an
// error nothing is left behind.
func Prepare(path string, data []byte, perm os.FileMode) (p *Pending, err error) {
	return prepare(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc replaces path, atomically, with what write writes (for content
// too large to build in memory first); a new file gets mode perm. An error
// of write leaves the old file in place and is returned as it is.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	p, err := prepare(path, perm, write)
	if err != nil {
		return err
	}
	if err := p.Commit(); err != nil {
		p.Discard()
		return err
	}
	return nil
}

func prepare(path string, perm os.FileMode, write func(io.Writer) error) (p *Pending, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return nil, err
	}
	if err = f.Chmod(perm); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	if err = f.Close(); err != nil {
		return nil, err
	}
	return &Pending{tmp: f.Name(), path: path}, nil
}

// Commit renames the temporary file over the destination and syncs the
// directory. After an error the temporary file is still there: Discard it.
func (p *Pending) Commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		return err
	}
	p.tmp = ""
	if d, err := os.Open(filepath.Dir(p.path)); err == nil {
		d.Sync() // the rename is durable once the directory is; best effort
		d.Close()
	}
	return nil
}

// Discard removes the temporary file of a Pending not committed; after
// Commit it does nothing.
func (p *Pending) Discard() {
	if p.tmp != "" {
		os.Remove(p.tmp)
		p.tmp = ""
	}
}
