package tenantsfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/tenantsfile"
)

// manyTenants is a tenants file of n tenants, each with a 32-byte secret,
// a hook id and an installation.
func manyTenants(n int) []byte {
	var b strings.Builder
	b.WriteString("tenants:\n")
	for i := range n {
		fmt.Fprintf(&b, "  t%06d:\n    secrets: [\"secret-%06d-0123456789abcdefghij\"]\n    hooks: [%d]\n    installation: %d\n", i, i, i+1, 1000+i)
	}
	b.WriteString("end: true\n")
	return []byte(b.String())
}

// BenchmarkLoad100k: a file of tenantsfile.MaxTenants tenants, read and
// checked whole (the bound: under 2 s).
func BenchmarkLoad100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tenants.yaml")
	data := manyTenants(tenantsfile.MaxTenants)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ts, err := tenantsfile.Load(path)
		if err != nil || len(ts) != tenantsfile.MaxTenants {
			b.Fatal(len(ts), err)
		}
	}
}
