// Command compilecost measures what a program pays to compile against
// forgehooks' typed payloads, against go-github's webhook parsing: each of
// the two programs beside this file (typed/, gogithub/: verify a signature,
// decode a payload) is built once with a build cache of its own, empty, so
// that everything it needs is compiled, the standard library included. It
// prints the wall time of `go build` and its peak memory (the largest
// resident set of the go command and the compilers it ran, from wait4's
// rusage). Builds run one after another, in the order given by -order.
//
// With -warm, each build's cache first holds the standard library packages
// the program imports (built beforehand, not measured), as on a developer's
// machine: what is measured is then the program's own packages and its
// non-standard dependencies.
//
//	cd bench && go run ./cmd/compilecost [-warm]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// warm is the -warm flag.
var warm bool

// programs are the packages built, by name.
var programs = map[string]string{
	"typed":    "./cmd/compilecost/typed",
	"gogithub": "./cmd/compilecost/gogithub",
}

func main() {
	order := flag.String("order", "typed,gogithub,typed,gogithub", "the programs to build, comma-separated, in order")
	flag.BoolVar(&warm, "warm", false, "build the standard library packages each program imports into its cache first, unmeasured")
	flag.Parse()
	if err := run(strings.Split(*order, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "compilecost:", err)
		os.Exit(1)
	}
}

func run(order []string) error {
	fmt.Println("| program | wall s | user+sys CPU s | peak RSS MB |")
	fmt.Println("|---|---:|---:|---:|")
	for _, name := range order {
		pkg, ok := programs[name]
		if !ok {
			return fmt.Errorf("no program %q (have typed, gogithub)", name)
		}
		r, err := build(pkg)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("| %s | %.1f | %.1f | %d |\n", name, r.wall.Seconds(), r.cpu.Seconds(), r.maxRSS>>20)
	}
	return nil
}

type result struct {
	wall, cpu time.Duration
	maxRSS    int64 // bytes
}

// build runs go build of pkg with an empty build cache and returns what it cost.
func build(pkg string) (result, error) {
	tmp, err := os.MkdirTemp("", "compilecost-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "GOCACHE="+filepath.Join(tmp, "cache"))
	if warm {
		list := exec.Command("go", "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", pkg)
		list.Env = env
		out, err := list.Output()
		if err != nil {
			return result{}, fmt.Errorf("go list: %w", err)
		}
		std := exec.Command("go", append([]string{"build"}, strings.Fields(string(out))...)...)
		std.Env, std.Stderr = env, os.Stderr
		if err := std.Run(); err != nil {
			return result{}, fmt.Errorf("building the standard library: %w", err)
		}
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "prog"), pkg)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, err
	}
	wall := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return result{}, fmt.Errorf("no rusage on this system")
	}
	return result{
		wall:   wall,
		cpu:    cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		maxRSS: ru.Maxrss << 10, // Linux reports KiB
	}, nil
}
