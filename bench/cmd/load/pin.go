package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// pinnedEnv carries, to the load generator re-executed under taskset, the CPU
// its receivers are pinned to.
const pinnedEnv = "FORGEHOOKS_LOAD_SERVER_CPU"

// serverCPU is the CPU every receiver is pinned to; -1: not pinned.
var serverCPU = -1

// pin re-executes the load generator under taskset on every CPU but the last,
// which its receivers then get to themselves (see pinned), so that the two
// do not take turns on one core, migrate, or evict each other's caches: what
// a receiver's CPU time per request then holds is its own work. It returns
// (without re-executing) with a reason when that cannot be done: one CPU, or
// no taskset. Once re-executed, it reads the receivers' CPU from the
// environment.
func pin() (why string) {
	if v := os.Getenv(pinnedEnv); v != "" {
		cpu, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Sprintf("%s=%q is not a CPU number", pinnedEnv, v)
		}
		serverCPU = cpu
		return ""
	}
	n := runtime.NumCPU()
	if n < 2 {
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
	args := append([]string{"taskset", "-c", "0-" + strconv.Itoa(n-2), self}, os.Args[1:]...)
	env := append(os.Environ(), pinnedEnv+"="+strconv.Itoa(n-1))
	return syscall.Exec(taskset, args, env).Error()
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
