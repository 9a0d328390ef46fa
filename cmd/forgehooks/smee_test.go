package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// smeeClientVersion is the smee-client release the interop test runs. It is
// installed from the npm registry into a cache directory outside the repository
// (FORGEHOOKS_NPM_CACHE, or the user cache directory), never vendored.
const smeeClientVersion = "5.0.0"

// smeeClient returns the path of smee-client's command, installing the package
// first if needed. The test is skipped only when node or npm is missing.
func smeeClient(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the smee-client interop test needs Node.js 20 or later and npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the smee-client interop test installs smee-client with it")
	}
	dir := os.Getenv("FORGEHOOKS_NPM_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "forgehooks", "npm")
	}
	dir = filepath.Join(dir, "smee-client-"+smeeClientVersion)
	script = filepath.Join(dir, "node_modules", "smee-client", "bin", "smee.js")
	if _, err := os.Stat(script); err == nil {
		return node, script
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund",
		"--no-package-lock", "smee-client@"+smeeClientVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing smee-client@%s into %s: %v\n%s", smeeClientVersion, dir, err, out)
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("smee-client installed, but %s is missing: %v", script, err)
	}
	return node, script
}

// TestSmeeClientInterop: the npm package smee-client, subscribed to our proxy,
// forwards a compact delivery to serve, where its signature verifies. smee-client
// re-serialises the body with JSON.stringify and ignores bodyB, so the delivery
// must be one whose compact JSON is its own re-serialisation.
func TestSmeeClientInterop(t *testing.T) {
	t.Parallel()
	node, script := smeeClient(t)
	rec := newReceived()
	sv := start(t, &cli{setup: rec.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret)
	px := start(t, nil, "proxy", "--addr", "127.0.0.1:0")
	channel := newChannel(t, px.addr)

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "--url", channel, "--target", "http://"+sv.addr+"/api/forge/webhooks")
	// Requests to 127.0.0.1 must not go through a proxy of the environment.
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=")
	var errOut syncBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	// smee-client prints "Connected to ..." and then "Forwarding ... to ..."
	// once its stream is open.
	var seen []string
	for len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], "Forwarding") {
		if !lines.Scan() {
			t.Fatalf("smee-client stopped before forwarding: %v\nstdout:\n%s\nstderr:\n%s", lines.Err(), strings.Join(seen, "\n"), errOut.String())
		}
		seen = append(seen, lines.Text())
	}
	go func() {
		for lines.Scan() {
		}
	}()

	var ping corpus.Example
	for _, ex := range corpus.Public() {
		if ex.Event == "ping" {
			ping = ex
			break
		}
	}
	if code, out, errs := runCmd(t, string(ping.Body), nil, "send", "--url", channel, "--secret", testSecret,
		"--event", "ping", "--delivery", "smee-1", "-"); code != exitOK {
		t.Fatalf("send: exit %d\n%s%s", code, out, errs)
	}
	got := rec.waitFor(t, "smee-1")
	if len(got) != 1 || got[0].Name != "ping" || !bytes.Equal(got[0].Payload, ping.Body) {
		t.Errorf("serve handled %d deliveries; first %q with %d bytes, want ping with the %d bytes sent", len(got), got[0].Name, len(got[0].Payload), len(ping.Body))
	}
	sv.stop()
	if log := sv.stderr.String(); !strings.Contains(log, `msg="delivery ok" id=smee-1 event=ping`) {
		t.Errorf("serve did not log the delivery as ok:\n%s", log)
	}
}
