package main

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inbox"
)

// TestMakeServeStopsWithMake: `make serve` execs the receiver it built, so
// that SIGTERM to make's PID stops the receiver: its port and its inbox are
// free once make exited (with `go run`, a child kept both).
//
// Not parallel: it binds a port it picked and freed, and checks that the port
// is free again at the end; a parallel test taking an ephemeral port could
// take that one in between.
func TestMakeServeStopsWithMake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds forgehooks with make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "inbox")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", "../..", "serve", "SERVE_ADDR="+addr, "UI_ADDR=", "INBOX_DIR="+dir, "SERVE_BIN="+filepath.Join(tmp, "forgehooks"))
	cmd.Env = append(cmd.Environ(), "FORGE_WEBHOOK_SECRET=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var log strings.Builder
	listening := regexp.MustCompile(`receiving deliveries" url=http://` + regexp.QuoteMeta(addr))
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if listening.MatchString(lines.Text()) {
			break
		}
	}
	if !listening.MatchString(log.String()) {
		t.Fatalf("make serve did not start listening:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "export FORGE_WEBHOOK_SECRET=forgehooks-development-secret-not-for-real-webhooks") {
		t.Errorf("make serve does not say how to send to it with its secret:\n%s", log.String())
	}
	go func() {
		for lines.Scan() {
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still taken after make exited: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	in, err := inbox.Open(ctx, inbox.Options{Dir: dir})
	if err != nil {
		t.Fatalf("the inbox is still held after make exited: %v", err)
	}
	in.Close(ctx)
}
