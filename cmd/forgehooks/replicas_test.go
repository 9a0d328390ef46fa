package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"forgehooks.dev/forgehooks/webhooks"
)

// plainNATS starts a NATS server with JetStream on 127.0.0.1, in no
// cluster (as `nats-server -js`), for the test, and returns its URL.
func plainNATS(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(testTimeout) {
		t.Fatal("nats-server did not start")
	}
	return ns.ClientURL()
}

// idTarget counts the deliveries 'work --forward' posts to it, by id.
type idTarget struct {
	mu  sync.Mutex
	ids map[string]int
}

func (f *idTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.ids[r.Header.Get(webhooks.HeaderDelivery)]++
	f.mu.Unlock()
}

func (f *idTarget) distinct() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ids)
}

// TestNATSWithoutReplicas: serve --nats and work --nats against one plain
// JetStream server, without --replicas, store and forward deliveries (the
// replicas chosen: 1), and work logs the workers it runs; --replicas 3 there
// fails naming the flag and what to give it.
func TestNATSWithoutReplicas(t *testing.T) {
	t.Parallel()
	url := plainNATS(t)
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", url, "--workers", "0")
	hook := "http://" + sv.addr + webhooks.DefaultPath
	for i := range 3 {
		id := fmt.Sprint("n-", i)
		if code, ans := deliver(t, hook, "issues", id, []byte(`{"action":"opened","n":"`+id+`"}`), nil); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s, want 202:\n%s", id, code, ans, sv.stderr)
		}
	}
	target := &idTarget{ids: map[string]int{}}
	tsrv := httptest.NewServer(target)
	defer tsrv.Close()
	wk := start(t, nil, "work", "--nats", url, "--forward", tsrv.URL)
	deadline := time.Now().Add(testTimeout)
	for target.distinct() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 deliveries forwarded; work's log:\n%s\nserve's log:\n%s", target.distinct(), wk.stderr, sv.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := wk.stop(); code != exitOK {
		t.Errorf("work exited %d:\n%s", code, wk.stderr)
	}
	if code := sv.stop(); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, sv.stderr)
	}
	if log, want := wk.stderr.String(), fmt.Sprintf("workers=%d replicas=1", 4*runtime.GOMAXPROCS(0)); !strings.Contains(log, want) {
		t.Errorf("work's log lacks %q:\n%s", want, log)
	}
	if log := sv.stderr.String(); !strings.Contains(log, "replicas=1") {
		t.Errorf("serve's log does not say the replicas chosen:\n%s", log)
	}
	// One line per delivery in each process at info level: the ingest's
	// store (it runs none), the worker's run.
	for i := range 3 {
		id := fmt.Sprint("n-", i)
		if n := strings.Count(sv.stderr.String(), `level=INFO msg="delivery stored" id=`+id+` `); n != 1 {
			t.Errorf("serve --workers 0 logged %s's store %d times at info level, want 1:\n%s", id, n, sv.stderr)
		}
		if n := strings.Count(wk.stderr.String(), `level=INFO msg="delivery handled" id=`+id+` `); n != 1 {
			t.Errorf("work logged %s's run %d times, want 1:\n%s", id, n, wk.stderr)
		}
	}

	for _, cmd := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret},
		{"work", "--forward", tsrv.URL},
	} {
		code, _, errOut := runCmd(t, "", nil, append(cmd, "--nats", url, "--replicas", "3")...)
		if code != exitUsage || !strings.Contains(errOut, "--replicas 3: it is a NATS server in no cluster: give --replicas 1") {
			t.Errorf("%s --replicas 3 on a server in no cluster: exit %d, want %d naming the flag:\n%s", cmd[0], code, exitUsage, errOut)
		}
	}
}

// TestWorkLogsDrainedAttempts: a delivery whose forward is under way when
// work is stopped finishes during the drain, and its run is logged (the
// inbox's watchers are stopped after the drain, not before).
func TestWorkLogsDrainedAttempts(t *testing.T) {
	t.Parallel()
	url := plainNATS(t)
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", url, "--workers", "0")
	arrived := make(chan struct{}, 1)
	tsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		time.Sleep(time.Second)
	}))
	defer tsrv.Close()
	wk := start(t, nil, "work", "--nats", url, "--forward", tsrv.URL)
	hook := "http://" + sv.addr + webhooks.DefaultPath
	if code, ans := deliver(t, hook, "issues", "drained-1", []byte(`{"action":"opened"}`), nil); code != http.StatusAccepted {
		t.Fatalf("%d %s", code, ans)
	}
	select {
	case <-arrived:
	case <-time.After(testTimeout):
		t.Fatalf("not forwarded; work's log:\n%s", wk.stderr)
	}
	if code := wk.stop(); code != exitOK {
		t.Fatalf("work exited %d:\n%s", code, wk.stderr)
	}
	if !strings.Contains(wk.stderr.String(), `msg="delivery handled" id=drained-1 `) {
		t.Errorf("the run that ended during the drain is not logged:\n%s", wk.stderr)
	}
}
