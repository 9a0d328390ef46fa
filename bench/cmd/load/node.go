package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// octokitWebhooksVersion is the release of the Node.js library that the "node"
// receiver runs: the library forgehooks descends from. It is installed with npm
// into a cache directory outside the repository, never vendored.
const octokitWebhooksVersion = "14.2.0"

// nodeReceiver is what the "node" receiver needs: node itself, our server
// script, and the npm prefix the library is installed under.
type nodeReceiver struct {
	node    string // absolute path of the node binary, symlinks resolved
	script  string // bench/node/server.mjs
	prefix  string // npm prefix holding node_modules/@octokit/webhooks
	label   string // what the table calls it, with the versions measured
	skipped string // why the receiver is left out, or ""
}

// setupNode finds node and npm, installs the library when it is not installed
// yet, and says why the receiver must be skipped when it cannot run: a machine
// without Node.js still gets the Go rows.
func setupNode(script, version string) *nodeReceiver {
	nr := &nodeReceiver{script: script}
	node, err := exec.LookPath("node")
	if err != nil {
		nr.skipped = "node is not installed"
		return nr
	}
	// The CPU of the process the load tool starts is what is measured; with
	// symlinks resolved, drive can check that it is node's own and not a wrapper's.
	if nr.node, err = filepath.EvalSymlinks(node); err != nil {
		nr.skipped = fmt.Sprintf("node: %v", err)
		return nr
	}
	if _, err := os.Stat(script); err != nil {
		nr.skipped = fmt.Sprintf("the server script: %v (run the load tool from bench/)", err)
		return nr
	}
	base := os.Getenv("FORGEHOOKS_NPM_CACHE")
	if base == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		base = filepath.Join(dir, "forgehooks", "npm")
	}
	nr.prefix = filepath.Join(base, "octokit-webhooks-"+version)
	if installed(nr.prefix, "@octokit/webhooks") != version {
		npm, err := exec.LookPath("npm")
		if err != nil {
			nr.skipped = "npm is not installed (it installs @octokit/webhooks@" + version + ")"
			return nr
		}
		fmt.Fprintf(os.Stderr, "installing @octokit/webhooks@%s into %s\n", version, nr.prefix)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := os.MkdirAll(nr.prefix, 0o755); err != nil {
			nr.skipped = err.Error()
			return nr
		}
		cmd := exec.CommandContext(ctx, npm, "install", "--prefix", nr.prefix, "--no-save", "--no-audit",
			"--no-fund", "--no-package-lock", "@octokit/webhooks@"+version)
		if out, err := cmd.CombinedOutput(); err != nil {
			nr.skipped = fmt.Sprintf("npm install @octokit/webhooks@%s failed: %v: %s", version, err, lastLine(out))
			return nr
		}
		if got := installed(nr.prefix, "@octokit/webhooks"); got != version {
			nr.skipped = fmt.Sprintf("npm installed @octokit/webhooks %q, not %s", got, version)
			return nr
		}
	}
	out, err := exec.Command(nr.node, "--version").Output()
	if err != nil {
		nr.skipped = fmt.Sprintf("node --version: %v", err)
		return nr
	}
	// The library's HMAC is in @octokit/webhooks-methods, installed by a
	// version range: the label names the one that ran.
	nr.label = fmt.Sprintf("Node.js library: @octokit/webhooks %s (webhooks-methods %s), createNodeMiddleware + on(\"push\"), node %s",
		version, installed(nr.prefix, "@octokit/webhooks-methods"), strings.TrimSpace(string(out)))
	return nr
}

// command is the node process of the receiver, listening on addr; with
// profileDir, node writes a CPU profile there when it exits.
func (nr *nodeReceiver) command(addr, secret, profileDir string) *exec.Cmd {
	var args []string
	if profileDir != "" {
		args = append(args, "--cpu-prof", "--cpu-prof-dir", profileDir, "--cpu-prof-name", "node.cpuprofile")
	}
	args = append(args, nr.script, "--module", nr.prefix, "--addr", addr, "--secret", secret, "--path", "/")
	return exec.Command(nr.node, args...)
}

// checkIsNode fails unless pid runs the node binary itself: its CPU time is
// what the table reports, and a wrapper's (npm exec, a shell) would not be.
func (nr *nodeReceiver) checkIsNode(pid int) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return err
	}
	if exe != nr.node {
		return fmt.Errorf("process %d runs %s, not node (%s): its CPU time would not be node's", pid, exe, nr.node)
	}
	return nil
}

// installed is the version of package pkg under an npm prefix, or "".
func installed(prefix, pkg string) string {
	b, err := os.ReadFile(filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Version
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
