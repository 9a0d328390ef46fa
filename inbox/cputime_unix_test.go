//go:build unix

package inbox

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system, all threads) this process has
// used: the benchmarks report it per delivery, a figure other processes on
// the machine disturb less than the wall-clock rate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
