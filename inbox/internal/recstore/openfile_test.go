package recstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestIndexFileRefused: an index replaced by a FIFO, a link or a large
// sparse file is refused at once (and the index read from the stream),
// never waited on nor read through.
func TestIndexFileRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, file string)
	}{
		{"fifo", func(t *testing.T, file string) {
			if runtime.GOOS == "windows" {
				t.Skip("no FIFO")
			}
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
		}},
		{"symlink", func(t *testing.T, file string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte(indexMagic), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, file); err != nil {
				t.Skip("symlink:", err)
			}
		}},
		{"sparse 2 GiB", func(t *testing.T, file string) {
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(indexMagic); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(2 << 30); err != nil {
				t.Skip("a 2 GiB sparse file:", err)
			}
		}},
		{"directory", func(t *testing.T, file string) {
			if err := os.Mkdir(file, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := startStore(t, dir)
			if err := s.r.PutWait(ctx, []byte("kept"), "i_x"); err != nil {
				t.Fatal(err)
			}
			s.kill()
			os.Remove(s.file())
			tc.plant(t, s.file())
			start := time.Now()
			s = startStore(t, dir)
			took := time.Since(start)
			wantValue(t, s.r, "i_x", "kept")
			// Generous for a loaded machine; the bug it guards took 38.9 s
			// (sparse) or forever (FIFO).
			if took > 10*time.Second {
				t.Fatalf("open took %v", took)
			}
			t.Logf("refused, open took %v", took)
		})
	}
}

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if _, _, err := OpenRegular(file, 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, st, err := OpenRegular(file, 10)
	if err != nil || st.Size() != 10 {
		t.Fatalf("a regular file of the bound: %v", err)
	}
	f.Close()
	if _, _, err := OpenRegular(file, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the bound: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err == nil {
		if _, _, err := OpenRegular(link, 10); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("a link: %v", err)
		}
	}
	if _, _, err := OpenRegular(dir, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v", err)
	}
}

// TestTemporaryRemovedAtOpen: what an index write cut short left is removed
// at the next Open, and nothing else.
func TestTemporaryRemovedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := startStore(t, dir)
	s.kill()
	left := []string{"." + testStream + ".index.123.tmp", "." + testStream + ".index.9.tmp"}
	other := []string{"." + testStream + ".index", "other.tmp", ".OTHER.index.1.tmp"}
	for _, n := range append(append([]string(nil), left...), other...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	startStore(t, dir)
	for _, n := range left {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", n, err)
		}
	}
	for _, n := range other {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}
