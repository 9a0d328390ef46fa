package inbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// The helper process of TestRestartHandsBackLeases: an embedded inbox in
// $INBOX_RESTART_DIR with the default AckWait, served over HTTP, whose
// handler takes 50–150 ms (32 workers), fails one attempt in ten, and logs each
// attempt's start and end to $INBOX_RESTART_LOG.
func TestRestartHelperProcess(t *testing.T) {
	dir := os.Getenv("INBOX_RESTART_DIR")
	if dir == "" {
		t.Skip("the helper process of TestRestartHandsBackLeases")
	}
	logf, err := os.OpenFile(os.Getenv("INBOX_RESTART_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	line := func(format string, args ...any) {
		// One write per line: appends of a few bytes are not interleaved.
		_, _ = logf.WriteString(fmt.Sprintf(format, args...) + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	}
	wh := newWebhooks(t)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		line("start %s %d", e.ID, info.Attempt)
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
		if rand.IntN(10) == 0 {
			line("fail %s %d", e.ID, info.Attempt)
			return errors.New("fails at random")
		}
		line("ok %s %d", e.ID, info.Attempt)
		return nil
	})
	in, err := openStarted(context.Background(), Options{Dir: dir, Receiver: wh, Logger: quiet(t), Workers: 32,
		RetryDelays: []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	line("ready %s -", ln.Addr())
	_ = http.Serve(ln, webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inbox: in, Logger: quiet(t)}))
}

type restartEvent struct {
	kind, id string
	attempt  int
	at       time.Time
}

func readRestartLog(t *testing.T, path string) []restartEvent {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []restartEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue // a line cut by the kill
		}
		ns, err := strconv.ParseInt(fs[3], 10, 64)
		if err != nil {
			continue
		}
		a, _ := strconv.Atoi(fs[2])
		out = append(out, restartEvent{fs[0], fs[1], a, time.Unix(0, ns)})
	}
	return out
}

// TestRestartHandsBackLeases: a process serving an embedded inbox with the
// default AckWait is killed (SIGKILL) under load; the next process on the
// directory runs every delivery that was leased (running) or waiting for
// its retry within 2 s of being ready, not after the lease ran out.
func TestRestartHandsBackLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	dir := t.TempDir()
	logPath := dir + "/attempts.log"
	start := func() (*exec.Cmd, string, time.Time) {
		before := len(readRestartLogOrNil(t, logPath))
		cmd := exec.Command(os.Args[0], "-test.run=^TestRestartHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "INBOX_RESTART_DIR="+dir+"/inbox", "INBOX_RESTART_LOG="+logPath)
		out, _ := os.OpenFile(dir+"/helper.out", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var ready restartEvent
		waitFor(t, 30*time.Second, "the helper process ready", func() bool {
			evs := readRestartLogOrNil(t, logPath)
			for _, e := range evs[min(before, len(evs)):] {
				if e.kind == "ready" {
					ready = e
					return true
				}
			}
			return false
		})
		return cmd, "http://" + ready.id, ready.at
	}
	cmd, url, _ := start()

	// Load: 8 clients post until the kill.
	var acked sync.Map
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("r-%06d", n.Add(1))
				if code, _, _ := post(t, client, url, "issues", id, payload(id), testSecret); code == 202 {
					acked.Store(id, true)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := time.Now()
	close(stop)
	wg.Wait()
	gen1 := readRestartLog(t, logPath)

	// What the killed process left: ids whose last attempt started and did
	// not end (leased), or failed (waiting for a retry).
	last := map[string]restartEvent{}
	for _, e := range gen1 {
		if e.kind != "ready" {
			last[e.id] = e
		}
	}
	left := map[string]string{}
	for id, e := range last {
		switch e.kind {
		case "start":
			left[id] = "leased"
		case "fail":
			left[id] = "retrying"
		}
	}
	var leased int
	for _, k := range left {
		if k == "leased" {
			leased++
		}
	}
	if leased == 0 {
		t.Fatal("no delivery was running at the kill: the test proved nothing")
	}

	_, _, readyAt := start()
	t.Logf("restarted %v after the kill", readyAt.Sub(killedAt).Round(time.Millisecond))
	var ackedIDs []string
	acked.Range(func(k, _ any) bool { ackedIDs = append(ackedIDs, k.(string)); return true })
	var all []restartEvent
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		all = readRestartLog(t, logPath)
		ok := map[string]bool{}
		for _, e := range all {
			if e.kind == "ok" {
				ok[e.id] = true
			}
		}
		var missing []string
		for _, id := range ackedIDs {
			if !ok[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, id := range missing[:min(3, len(missing))] {
				var evs []string
				for _, e := range all {
					if e.id == id {
						evs = append(evs, fmt.Sprintf("%s#%d@%s", e.kind, e.attempt, e.at.Format("15:04:05.000")))
					}
				}
				t.Errorf("%s acknowledged, never handled: %v", id, evs)
			}
			t.Fatalf("%d acknowledged deliveries not handled after 60 s", len(missing))
		}
	}
	first := map[string]time.Time{}
	for _, e := range all[len(gen1):] {
		if e.kind == "start" {
			if _, seen := first[e.id]; !seen {
				first[e.id] = e.at
			}
		}
	}
	var worst time.Duration
	for id, kind := range left {
		at, ok := first[id]
		if !ok {
			t.Errorf("%s (%s at the kill) did not run after the restart", id, kind)
			continue
		}
		d := at.Sub(readyAt)
		worst = max(worst, d)
		if d > 2*time.Second {
			t.Errorf("%s (%s at the kill) ran again %v after the new process was ready", id, kind, d.Round(time.Millisecond))
		}
	}
	t.Logf("%d deliveries acknowledged; at the kill %d leased and %d waiting for a retry; all ran again within %v of the restart (AckWait %v)",
		len(ackedIDs), leased, len(left)-leased, worst.Round(time.Millisecond), DefaultAckWait)
}

func readRestartLogOrNil(t *testing.T, path string) []restartEvent {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return readRestartLog(t, path)
}
