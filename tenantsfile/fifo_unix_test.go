//go:build unix

package tenantsfile_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/tenantsfile"
)

// TestFIFO: a FIFO as the tenants file, or named by a file: reference,
// fails at once with an error that says it is not a regular file, where
// opening it would block until a writer came.
func TestFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, tc := range []struct{ name, path string }{
		{"tenants file", fifo},
		{"secret file", write(t, dir, "secret.yaml", "tenants:\n  a:\n    secrets: [file:fifo]\nend: true\n")},
		{"token file", write(t, dir, "token.yaml", "tenants:\n  a:\n    secrets: [x]\n    token: {file: fifo}\nend: true\n")},
		{"directory", write(t, dir, "dir.yaml", "tenants:\n  a:\n    secrets: [file:.]\nend: true\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := tenantsfile.Load(tc.path); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tenantsfile.ErrNotRegular) || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("error %v, want one wrapping ErrNotRegular", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Load blocked on a FIFO")
			}
		})
	}
}
