//go:build linux || darwin

package app_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
)

// A key file that is no regular file, or is larger than MaxKeyFileSize, is
// refused before it is read, with an error that says why: a FIFO no one
// writes to, /dev/zero, a directory, a 1 GiB sparse file, a file just over
// the bound.
func TestKeyFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.pem")
	f, err := os.OpenFile(huge, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	over := filepath.Join(dir, "over.pem")
	if err := os.WriteFile(over, append(pkcs1PEM(testKey()), make([]byte, app.MaxKeyFileSize)...), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, file, err string }{
		{"FIFO", fifo, "not a regular file"},
		{"/dev/zero", "/dev/zero", "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"1 GiB", huge, "1073741824 bytes, over 16384"},
		{"over the bound", over, "over 16384"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := app.New(app.Options{AppID: testAppID, PrivateKeyFile: tt.file})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
			case <-time.After(30 * time.Second): // a generous bound: a hang is the failure
				t.Fatal("New still reading the key file after 30 s")
			}
		})
	}
}

// A key file its group or others may read is used, with a warning; one only
// its owner reads gets none.
func TestKeyFileModeWarned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o400, false}, {0o640, true}, {0o644, true}} {
		file := filepath.Join(dir, tt.mode.String()+".pem")
		if err := os.WriteFile(file, pkcs1PEM(testKey()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, tt.mode); err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := app.New(app.Options{AppID: testAppID, PrivateKeyFile: file, Logger: log}); err != nil {
			t.Fatalf("%v: %v", tt.mode, err)
		}
		if got := strings.Contains(logs.String(), "can be read by others than its owner"); got != tt.warn {
			t.Errorf("mode %v: warned %v, want %v; log:\n%s", tt.mode, got, tt.warn, logs.String())
		}
	}
}
