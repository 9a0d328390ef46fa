//go:build unix

package tenantsfile_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/tenantsfile"
)

// BenchmarkLoad100k: a file of tenantsfile.MaxTenants tenants, read and
// checked whole (the bound: under 2 s).
func BenchmarkLoad100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tenants.yaml")
	data := manyTenants(tenantsfile.MaxTenants)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	// The CPU time the process spent, beside the wall time: on a machine
	// shared with other work, the one a load costs.
	before := cpuTime()
	for b.Loop() {
		ts, err := tenantsfile.Load(path)
		if err != nil || len(ts) != tenantsfile.MaxTenants {
			b.Fatal(len(ts), err)
		}
	}
	b.ReportMetric((cpuTime()-before).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
