package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// signedPost sends a delivery of event with body to url and returns the status.
func signedPost(t *testing.T, url, event string, body []byte) int {
	t.Helper()
	sig, err := signing.Sign(testSecret, body)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(webhooks.HeaderEvent, event)
	r.Header.Set(webhooks.HeaderDelivery, "d-"+event)
	r.Header.Set(webhooks.HeaderSignature, sig)
	res, err := (&http.Client{Timeout: testTimeout}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// trickle writes a byte to conn every few milliseconds until the server has
// closed the connection (done is closed), or reports an error once the test's
// bound passes.
func trickle(conn net.Conn, done <-chan struct{}, what string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testTimeout)
	for {
		select {
		case <-done:
			return nil
		case <-tick.C:
			conn.Write([]byte(" ")) // fails once the server has closed
		case <-deadline:
			return fmt.Errorf("%s: serve did not cut the connection off", what)
		}
	}
}

// TestServeCutsOffSlowClients: serve's --read-header-timeout, --read-timeout
// and --idle-timeout end connections that send headers or a body a byte at a
// time, or sit idle; no handler runs for them, and a delivery beside them is
// served. (Small timeouts stand in for the defaults of 10s, 30s and 120s.)
func TestServeCutsOffSlowClients(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	setup := func(wh *webhooks.Webhooks) {
		wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret,
		"--read-header-timeout", "200ms", "--read-timeout", "300ms", "--idle-timeout", "300ms")
	url := "http://" + sv.addr + webhooks.DefaultPath

	dial := func() (net.Conn, chan struct{}, *bytes.Buffer) {
		conn, err := net.DialTimeout("tcp", sv.addr, testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetReadDeadline(time.Now().Add(testTimeout))
		closed := make(chan struct{})
		var got bytes.Buffer
		go func() {
			io.Copy(&got, conn) // until the server closes (or resets) it
			close(closed)
		}()
		return conn, closed, &got
	}

	// A body a byte at a time: cut off by the read timeout.
	body, bodyClosed, bodyAnswer := dial()
	sig, _ := signing.Sign(testSecret, []byte(`{}`))
	fmt.Fprintf(body, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: ping\r\n%s: slow\r\n%s: %s\r\nContent-Length: 1000000\r\n\r\n{",
		webhooks.DefaultPath, webhooks.HeaderEvent, webhooks.HeaderDelivery, webhooks.HeaderSignature, sig)
	// Headers a byte at a time: cut off by the read-header timeout.
	head, headClosed, _ := dial()
	fmt.Fprintf(head, "POST %s HTTP/1.1\r\n", webhooks.DefaultPath)
	// A keep-alive connection that goes idle after one delivery.
	idle, idleClosed, idleAnswer := dial()
	fmt.Fprintf(idle, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: ping\r\n%s: idle\r\n%s: %s\r\nContent-Length: 2\r\n\r\n{}",
		webhooks.DefaultPath, webhooks.HeaderEvent, webhooks.HeaderDelivery, webhooks.HeaderSignature, sig)

	// Meanwhile a delivery is served.
	if code := signedPost(t, url, "ping", []byte(`{"zen":"beside the slow ones"}`)); code != http.StatusOK {
		t.Fatalf("a delivery beside slow clients got %d", code)
	}

	headErr := make(chan error, 1)
	go func() { headErr <- trickle(head, headClosed, "slow headers") }()
	if err := trickle(body, bodyClosed, "slow body"); err != nil {
		t.Fatal(err)
	}
	if err := <-headErr; err != nil {
		t.Fatal(err)
	}
	select {
	case <-idleClosed:
	case <-time.After(testTimeout):
		t.Fatal("serve kept an idle connection open")
	}
	if got := bodyAnswer.String(); got != "" && !strings.HasPrefix(got, "HTTP/1.1 400 ") {
		t.Errorf("the slow body was answered %q", got)
	}
	if got := idleAnswer.String(); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("the idle connection's delivery was answered %q", got)
	}
	if got := ran.Load(); got != 2 {
		t.Errorf("handlers ran %d times, want 2 (the delivery beside, and the idle connection's)", got)
	}
}

// TestServeSIGTERM runs serve in a child process (this test binary again),
// sends it a delivery whose handler outlives its 202, and SIGTERM: serve must
// let the handler finish before it exits 0. The handler starts finishing only
// once the signal has arrived, so a serve that did not wait would exit first.
func TestServeSIGTERM(t *testing.T) {
	t.Parallel()
	if os.Getenv("FORGEHOOKS_SERVE_CHILD") == "1" {
		serveChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeSIGTERM$", "-test.v")
	cmd.Env = append(os.Environ(), "FORGEHOOKS_SERVE_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	var out strings.Builder
	await := func(prefix string) string {
		t.Helper()
		deadline := time.After(testTimeout)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("child ended before %q; its output:\n%s\n%s", prefix, out.String(), stderr.String())
				}
				out.WriteString(l + "\n")
				if strings.HasPrefix(l, prefix) {
					return strings.TrimPrefix(l, prefix)
				}
			case <-deadline:
				t.Fatalf("no %q from the child; its output:\n%s\n%s", prefix, out.String(), stderr.String())
			}
		}
	}
	addr := await("LISTENING ")
	if code := signedPost(t, "http://"+addr+webhooks.DefaultPath, "ping", []byte(`{"zen":"sigterm"}`)); code != http.StatusAccepted {
		t.Fatalf("got %d, want 202 while the handler runs", code)
	}
	await("HANDLER STARTED")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		out.WriteString(l + "\n")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM; output:\n%s\n%s", err, out.String(), stderr.String())
		}
	case <-time.After(testTimeout):
		t.Fatal("serve did not exit after SIGTERM")
	}
	o := out.String()
	fin, serveDone := strings.Index(o, "HANDLER FINISHED"), strings.Index(o, "SERVE RETURNED 0")
	if fin < 0 || serveDone < 0 || fin > serveDone {
		t.Errorf("serve returned before the handler finished, or not at all; output:\n%s\n%s", o, stderr.String())
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("serve did not log its shutdown:\n%s", stderr.String())
	}
}

// serveChild is the child of TestServeSIGTERM: serve as main runs it, with
// SIGTERM ending its context, and a handler that waits for that signal.
func serveChild(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c := &cli{stdin: strings.NewReader(""), stdout: os.Stderr, stderr: os.Stderr, getenv: func(string) string { return "" }}
	c.listening = func(addr string) { fmt.Printf("LISTENING %s\n", addr) }
	c.setup = func(wh *webhooks.Webhooks) {
		wh.On("ping", func(context.Context, emitter.Event) error {
			fmt.Println("HANDLER STARTED")
			<-ctx.Done()
			// A serve that does not wait exits well within this.
			time.Sleep(200 * time.Millisecond)
			fmt.Println("HANDLER FINISHED")
			return nil
		})
	}
	code := run(ctx, c, []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--handler-timeout", "1ms"})
	fmt.Printf("SERVE RETURNED %d\n", code)
	if code != exitOK {
		os.Exit(code)
	}
}
