package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

var crashRuns = flag.Int("inbox.crash.runs", 3, "times TestServeInboxCrash kills serve with SIGKILL under load (the issue's goal: 100)")

// inboxChild runs 'serve --inbox DIR' in a child process (this test binary
// again) whose handlers append each delivery id to a file once they are done.
// "slow" and "stuck" deliveries wait for SIGTERM, then 300 ms or 5 s.
type inboxChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	lines  chan string
	exited chan error
	out    *syncBuffer
	// unmatched are the lines an await passed over: a later await finds
	// them (a restarted serve may start a handler before it listens).
	unmatched []string
}

const inboxChildEnv = "FORGEHOOKS_INBOX_CHILD"

func startInboxChild(t *testing.T, test, dir, handledFile string, extra ...string) *inboxChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), inboxChildEnv+"=1", "FORGEHOOKS_INBOX_DIR="+dir, "FORGEHOOKS_INBOX_HANDLED="+handledFile,
		"FORGEHOOKS_INBOX_ARGS="+strings.Join(extra, " "))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := &inboxChild{t: t, cmd: cmd, lines: make(chan string, 1024), exited: make(chan error, 1), out: &syncBuffer{}}
	cmd.Stderr = ch.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.out.Write([]byte(sc.Text() + "\n"))
			select {
			case ch.lines <- sc.Text():
			default:
			}
		}
		close(ch.lines)
		ch.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	ch.addr = ch.await("LISTENING ")
	return ch
}

func (ch *inboxChild) await(prefix string) string {
	ch.t.Helper()
	for i, l := range ch.unmatched {
		if strings.HasPrefix(l, prefix) {
			ch.unmatched = append(ch.unmatched[:i], ch.unmatched[i+1:]...)
			return strings.TrimPrefix(l, prefix)
		}
	}
	deadline := time.After(testTimeout)
	for {
		select {
		case l, ok := <-ch.lines:
			if !ok {
				ch.t.Fatalf("child ended before %q:\n%s", prefix, ch.out)
			}
			if strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
			ch.unmatched = append(ch.unmatched, l)
		case <-deadline:
			ch.t.Fatalf("no %q from the child:\n%s", prefix, ch.out)
		}
	}
}

// wait returns the child's exit error once it has ended.
func (ch *inboxChild) wait() error {
	ch.t.Helper()
	for range ch.lines {
	}
	select {
	case err := <-ch.exited:
		return err
	case <-time.After(testTimeout):
		ch.t.Fatalf("child did not exit:\n%s", ch.out)
		return nil
	}
}

// inboxChildMain is the child: serve with an inbox, as main runs it.
func inboxChildMain() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	f, err := os.OpenFile(os.Getenv("FORGEHOOKS_INBOX_HANDLED"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Println("CHILD:", err)
		os.Exit(3)
	}
	c := &cli{stdin: strings.NewReader(""), stdout: os.Stderr, stderr: os.Stderr, getenv: func(string) string { return "" }}
	c.listening = func(addr string) { fmt.Printf("LISTENING %s\n", addr) }
	c.setup = func(wh *webhooks.Webhooks) {
		wh.OnAny(func(hctx context.Context, e emitter.Event) error {
			info, _ := webhooks.DeliveryFrom(hctx)
			if e.Name == "slow" || e.Name == "stuck" {
				fmt.Printf("HANDLER STARTED %s %d\n", e.ID, info.Attempt)
				<-ctx.Done()
				if e.Name == "slow" {
					time.Sleep(300 * time.Millisecond)
				} else {
					time.Sleep(5 * time.Second)
				}
				fmt.Printf("HANDLER FINISHED %s\n", e.ID)
			}
			// One write with O_APPEND: a line is whole or missing.
			_, err := fmt.Fprintf(f, "%s %d\n", e.ID, info.Attempt)
			return err
		})
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", os.Getenv("FORGEHOOKS_INBOX_DIR"), "--ack-wait", "2s"}
	if extra := os.Getenv("FORGEHOOKS_INBOX_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	code := run(ctx, c, args)
	fmt.Printf("SERVE RETURNED %d\n", code)
	os.Exit(code)
}

// handledIDs reads the child's file: each id handled, with its attempts.
func handledIDs(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if id, attempt, ok := strings.Cut(l, " "); ok {
			out[id] = append(out[id], attempt)
		}
	}
	return out
}

// TestServeInboxCrash kills 'serve --inbox DIR' with SIGKILL under load,
// -inbox.crash.runs times, restarting it on the same directory each time;
// then every delivery that was answered 2xx must be handled.
func TestServeInboxCrash(t *testing.T) {
	t.Parallel()
	if os.Getenv(inboxChildEnv) == "1" {
		inboxChildMain()
		return
	}
	dir, handledFile := t.TempDir(), filepath.Join(t.TempDir(), "handled")
	var (
		mu    sync.Mutex
		acked = map[string]int{}
		sent  int
	)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for run := range *crashRuns {
		ch := startInboxChild(t, "TestServeInboxCrash", dir, handledFile)
		url := "http://" + ch.addr + webhooks.DefaultPath
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("k-%03d-%d-%d", run, w, i)
					// A body of its own: the replay guard answers one body
					// under another id as a duplicate.
					body := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"},"n":"` + id + `"}`)
					sig, _ := signing.Sign(testSecret, body)
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(webhooks.HeaderEvent, "issues")
					req.Header.Set(webhooks.HeaderDelivery, id)
					req.Header.Set(webhooks.HeaderSignature, sig)
					res, err := client.Do(req)
					mu.Lock()
					sent++
					if err == nil && res.StatusCode/100 == 2 {
						acked[id] = res.StatusCode
					}
					mu.Unlock()
					if err != nil {
						return // killed
					}
					res.Body.Close()
				}
			}()
		}
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
		ch.cmd.Process.Kill()
		ch.wait()
		close(stop)
		wg.Wait()
	}
	// The last start runs what is left; those in flight at a kill come back
	// once their lease (AckWait) runs out.
	ch := startInboxChild(t, "TestServeInboxCrash", dir, handledFile)
	deadline := time.Now().Add(3 * time.Minute)
	var lost []string
	for {
		handled := handledIDs(t, handledFile)
		lost = lost[:0]
		mu.Lock()
		for id := range acked {
			if _, ok := handled[id]; !ok {
				lost = append(lost, id)
			}
		}
		mu.Unlock()
		if len(lost) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	ch.cmd.Process.Signal(syscall.SIGTERM)
	ch.wait()
	handled := handledIDs(t, handledFile)
	again := 0
	for _, attempts := range handled {
		again += len(attempts) - 1
	}
	t.Logf("%d runs killed with SIGKILL under load; %d requests, %d answered 2xx, %d of them lost; %d handled more than once (at-least-once)", *crashRuns, sent, len(acked), len(lost), again)
	if len(acked) == 0 {
		t.Fatal("no delivery was acknowledged: the test proved nothing")
	}
	if len(lost) > 0 {
		t.Fatalf("%d deliveries answered 2xx were never handled, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
}

// TestServeInboxSIGTERM: on SIGTERM serve stops taking deliveries and lets a
// running handler finish before it exits 0; the delivery is then handled
// for good. A handler still running at --shutdown-timeout is left
// unacknowledged, and runs again (attempt 2) after a restart.
func TestServeInboxSIGTERM(t *testing.T) {
	t.Parallel()
	if os.Getenv(inboxChildEnv) == "1" {
		inboxChildMain()
		return
	}
	dir, handledFile := t.TempDir(), filepath.Join(t.TempDir(), "handled")
	ch := startInboxChild(t, "TestServeInboxSIGTERM", dir, handledFile)
	if code, ans := deliver(t, "http://"+ch.addr+webhooks.DefaultPath, "slow", "slow-1", []byte(`{"n":"slow-1"}`), nil); code != 202 {
		t.Fatalf("%d %s", code, ans)
	}
	ch.await("HANDLER STARTED slow-1 1")
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if err := ch.wait(); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM:\n%s", err, ch.out)
	}
	o := ch.out.String()
	if fin, ret := strings.Index(o, "HANDLER FINISHED slow-1"), strings.Index(o, "SERVE RETURNED 0"); fin < 0 || ret < 0 || fin > ret {
		t.Fatalf("serve returned before its handler finished:\n%s", o)
	}
	code, out, _ := runCmd(t, "", nil, "inbox", "show", "slow-1", "--inbox", dir, "--json")
	var r struct{ Status string }
	if json.Unmarshal([]byte(out), &r); code != exitOK || r.Status != "handled" {
		t.Fatalf("after the drain: %d %s", code, out)
	}

	// A handler that outlives the shutdown deadline.
	ch = startInboxChild(t, "TestServeInboxSIGTERM", dir, handledFile, "--shutdown-timeout", "500ms")
	if code, ans := deliver(t, "http://"+ch.addr+webhooks.DefaultPath, "stuck", "stuck-1", []byte(`{"n":"stuck-1"}`), nil); code != 202 {
		t.Fatalf("%d %s", code, ans)
	}
	ch.await("HANDLER STARTED stuck-1 1")
	ch.cmd.Process.Signal(syscall.SIGTERM)
	err := ch.wait()
	if err == nil || !strings.Contains(ch.out.String(), "run again after a restart") {
		t.Errorf("serve past its shutdown deadline: %v\n%s", err, ch.out)
	}
	if strings.Contains(ch.out.String(), "HANDLER FINISHED stuck-1") {
		t.Fatal("the stuck handler finished: the test proved nothing")
	}
	// Restarted, the delivery runs again once its lease ran out; SIGTERM
	// at once ends its wait.
	ch = startInboxChild(t, "TestServeInboxSIGTERM", dir, handledFile, "--shutdown-timeout", "30s")
	ch.await("HANDLER STARTED stuck-1 2")
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if err := ch.wait(); err != nil {
		t.Fatalf("%v\n%s", err, ch.out)
	}
	if h := handledIDs(t, handledFile); len(h["stuck-1"]) != 1 || h["stuck-1"][0] != "2" || len(h["slow-1"]) != 1 {
		t.Errorf("handled: %v; want slow-1 once, stuck-1 once at attempt 2", h)
	}
}
