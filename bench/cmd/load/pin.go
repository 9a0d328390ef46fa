package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// pinnedEnv carries, to the load generator re-executed under taskset, the CPU
// its receivers are pinned to.
const pinnedEnv = "FORGEHOOKS_LOAD_SERVER_CPU"

// serverCPU is the CPU every receiver is pinned to; -1: not pinned.
var serverCPU = -1

// pin re-executes the load generator under taskset on every CPU it may use
// but the last, which its receivers then get to themselves (see pinned), so
// that the two do not take turns on one core, migrate, or evict each other's
// caches: what a receiver's CPU time per request then holds is its own work.
// It returns (without re-executing) with a reason when that cannot be done:
// one CPU allowed, or no taskset. Once re-executed, it reads the receivers'
// CPU from the environment.
func pin() (why string) {
	if v := os.Getenv(pinnedEnv); v != "" {
		cpu, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Sprintf("%s=%q is not a CPU number", pinnedEnv, v)
		}
		serverCPU = cpu
		return ""
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return err.Error()
	}
	if len(cpus) < 2 {
		return "one CPU"
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return "no taskset"
	}
	self, err := os.Executable()
	if err != nil {
		return err.Error()
	}
	load := make([]string, len(cpus)-1)
	for i, c := range cpus[:len(cpus)-1] {
		load[i] = strconv.Itoa(c)
	}
	args := append([]string{"taskset", "-c", strings.Join(load, ","), self}, os.Args[1:]...)
	env := append(os.Environ(), pinnedEnv+"="+strconv.Itoa(cpus[len(cpus)-1]))
	return syscall.Exec(taskset, args, env).Error()
}

// allowedCPUs lists the CPUs this process may run on (its affinity, which a
// container's cpuset narrows), from /proc/self/status.
func allowedCPUs() ([]int, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(status)) {
		list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		return parseCPUList(strings.TrimSpace(list))
	}
	return nil, fmt.Errorf("/proc/self/status has no Cpus_allowed_list")
}

// parseCPUList expands a kernel CPU list ("0-3,8,10-11").
func parseCPUList(list string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not a CPU list", list)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// pinned returns cmd to run on the receivers' CPU, through taskset (which
// executes the command in its own process, so that the pid read for the
// CPU time is the receiver's); cmd itself when not pinned.
func pinned(cmd *exec.Cmd) *exec.Cmd {
	if serverCPU < 0 {
		return cmd
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return cmd
	}
	return exec.Command(taskset, append([]string{"-c", strconv.Itoa(serverCPU), cmd.Path}, cmd.Args[1:]...)...)
}
