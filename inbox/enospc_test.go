//go:build linux

package inbox

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxDiskFull: on a full disk (a small tmpfs) JetStream stops itself;
// deliveries are refused with an error that says so, and once space is
// freed the inbox restarts its server and takes deliveries again, without a
// restart of the process. Needs root (to mount the tmpfs).
func TestInboxDiskFull(t *testing.T) {
	diskFull(t, 256, 140, 1<<20)
}

// TestInboxDiskFullSmall: the same on a 64 MiB disk, smaller than the free
// space a large disk must have before the store restarts: the threshold
// follows the disk's size.
func TestInboxDiskFullSmall(t *testing.T) {
	diskFull(t, 64, 36, 256<<10)
}

// tmpfs mounts a tmpfs of mib MiB on a directory of the test, unmounted at
// its end; it skips the test where it cannot (not root, -short).
func tmpfs(t *testing.T, mib int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to mount a %d MiB tmpfs", mib)
	}
	if testing.Short() {
		t.Skipf("fills a %d MiB tmpfs", mib)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", mib), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// diskFull fills a tmpfs of diskMiB (a file of fillerMiB, then deliveries of
// padding bytes) until the store stops, frees the file and waits for the
// store to take deliveries again.
func diskFull(t *testing.T, diskMiB, fillerMiB, padding int) {
	t.Parallel()
	dir := tmpfs(t, diskMiB)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, fillerMiB<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	in := openInbox(t, filepath.Join(dir, "inbox"), Options{MaxStoreBytes: 1 << 30, Logger: quietTo(t, &logs)})
	ctx := context.Background()
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", padding)))
	}
	var err error
	stored := 0
	tries := 2 * (diskMiB << 20) / padding
	for i := 0; i < tries; i++ {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = in.Enqueue(c, webhooks.Delivery{ID: fmt.Sprintf("full-%d", i), Name: "push", Payload: body(i)})
		cancel()
		if err != nil {
			break
		}
		stored++
	}
	if err == nil {
		t.Fatalf("%d MiB stored on a disk of %d MiB with %d MiB taken", tries*padding>>20, diskMiB, fillerMiB)
	}
	t.Logf("%d deliveries of %d KiB stored, then: %v", stored, padding>>10, err)
	// The next ones say the store stopped.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(err.Error(), "stopped") && time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = in.Enqueue(c, webhooks.Delivery{ID: "while-full", Name: "push", Payload: body(-1)})
		cancel()
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(err.Error(), "stopped") || !strings.Contains(err.Error(), "disk") {
		t.Errorf("on a full disk: %v; want an error saying the store stopped on a full disk", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	deadline = time.Now().Add(30 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = in.Enqueue(c, webhooks.Delivery{ID: "after-space", Name: "push", Payload: body(-2)})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after space was freed: %v\nlog:\n%s", err, logs.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("taking deliveries again %v after the space was freed", time.Since(freed).Round(100*time.Millisecond))
	if !strings.Contains(logs.String(), "restarted") {
		t.Errorf("the restart is not logged:\n%s", logs.String())
	}
	// The deliveries stored before the disk filled are still there.
	if _, err := in.Get(ctx, "full-0"); err != nil {
		t.Errorf("a delivery stored before the disk filled: %v", err)
	}
}

// onceReceiver counts each delivery's runs and notes the deliveries whose
// runs overlapped. Each run holds for hold and, if it began while armed,
// then until gate is closed.
type onceReceiver struct {
	hold  time.Duration
	gate  chan struct{}
	armed atomic.Bool

	mu       sync.Mutex
	runs     map[string]int
	running  map[string]bool
	overlaps []string
}

func (r *onceReceiver) ReceiveDelivery(ctx context.Context, d webhooks.Delivery) error {
	r.mu.Lock()
	if r.running[d.ID] {
		r.overlaps = append(r.overlaps, d.ID)
	}
	r.running[d.ID] = true
	r.runs[d.ID]++
	r.mu.Unlock()
	held := r.armed.Load()
	defer func() {
		r.mu.Lock()
		delete(r.running, d.ID)
		r.mu.Unlock()
	}()
	select {
	case <-time.After(r.hold):
	case <-ctx.Done():
		return ctx.Err()
	}
	if !held {
		return nil
	}
	select {
	case <-r.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// state returns the runs of id and how many handlers run now.
func (r *onceReceiver) state(id string) (runs, inFlight int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id], len(r.running)
}

// TestInboxDiskFullInFlight: the disk fills while slow handlers run and
// more wait, over real HTTP, with and without order. Once space is freed the
// store restarts with the handlers still running; the forge sends again what
// was answered 503. Every delivery reaches its handler exactly once, never
// two runs of one at the same time: a delivery answered 503 that was stored
// anyway is a duplicate when sent again, and the runner started after the
// restart runs none of those the one before it still ran.
func TestInboxDiskFullInFlight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		orderBy OrderKey
	}{
		{"unordered", nil},
		{"ordered by repository", ByRepository},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			diskFullInFlight(t, tc.orderBy)
		})
	}
}

// diskFullInFlight fills a 64 MiB disk with deliveries of 256 KiB (of 8
// repositories) while their handlers run, frees it, sends again what was
// refused and checks that each ran once.
func diskFullInFlight(t *testing.T, orderBy OrderKey) {
	dir := tmpfs(t, 64)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 36<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	// The first handlers hold their deliveries from before the disk fills
	// until after the store restarted; the runs begun later take hold.
	gate := make(chan struct{})
	rcv := &onceReceiver{hold: 300 * time.Millisecond, gate: gate, runs: map[string]int{}, running: map[string]bool{}}
	rcv.armed.Store(true)
	const ackWait = 2 * time.Second
	// The held handlers hold from before the disk fills until after the
	// restart, which on a loaded machine is more than the default
	// HandlerTimeout: a handler cut off by it fails and runs again, rightly.
	in := openInbox(t, filepath.Join(dir, "inbox"), Options{Receiver: rcv, Workers: 4, AckWait: ackWait,
		OrderBy: orderBy, MaxStoreBytes: 1 << 30, HandlerTimeout: 10 * time.Minute, Logger: quietTo(t, &logs)})
	srv := receiver(t, newWebhooks(t), in)
	send := func(id string) int {
		repo := 0
		for _, c := range id {
			repo += int(c)
		}
		body := fmt.Appendf(nil, `{"id":%q,"repository":{"id":%d},"pad":"%s"}`, id, repo%8, strings.Repeat("x", 256<<10))
		code, _, err := post(t, srv.Client(), srv.URL, "push", id, body, testSecret)
		if err != nil {
			t.Fatalf("posting %s: %v", id, err)
		}
		return code
	}
	var ids, refused []string
	inFlight := 0
	for i := 0; len(refused) < 5; i++ {
		if i == 400 {
			t.Fatalf("400 deliveries of 256 KiB stored on a 64 MiB disk with 36 MiB taken")
		}
		id := fmt.Sprintf("f-%d", i)
		ids = append(ids, id)
		_, running := rcv.state(id)
		switch code := send(id); {
		case code == http.StatusServiceUnavailable:
			if len(refused) == 0 {
				inFlight = running
				rcv.armed.Store(false)
			}
			refused = append(refused, id)
		case code/100 != 2:
			t.Fatalf("%s answered %d", id, code)
		}
	}
	if inFlight == 0 {
		t.Fatalf("no handler ran when the disk filled: nothing in flight to test (%d sent)\nlog:\n%s", len(ids), logs.String())
	}
	t.Logf("%d deliveries sent, the disk full at %s with %d handlers running", len(ids), refused[0], inFlight)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The forge sends again what was answered 503, until it is taken.
	dups := 0
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range refused {
		for {
			code := send(id)
			if code == http.StatusOK {
				dups++ // stored although answered 503: a duplicate now
			}
			if code/100 == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("60 s after space was freed %s is answered %d\nlog:\n%s", id, code, logs.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for i := range 5 {
		id := fmt.Sprintf("after-%d", i)
		ids = append(ids, id)
		if code := send(id); code/100 != 2 {
			t.Fatalf("%s sent after the restart: %d", id, code)
		}
	}
	t.Logf("after the restart: %d sent again, %d of them duplicates", len(refused), dups)
	// A runner started at the restart would run the held deliveries again
	// at once (their leases handed back), or after AckWait: the handlers
	// go on past both.
	time.Sleep(2 * ackWait)
	close(gate)
	for _, id := range ids {
		waitHandled(t, in, id, 120*time.Second)
	}
	// Nothing left to hand out again: a second run would come now.
	waitFor(t, 60*time.Second, "the workers' consumer to hold no delivery", func() bool {
		s, err := in.Stats(context.Background())
		return err == nil && s.Waiting == 0
	})
	for _, id := range ids {
		if runs, _ := rcv.state(id); runs != 1 {
			t.Errorf("%s ran %d times; want once", id, runs)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs.String())
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.overlaps) > 0 {
		t.Errorf("two runs at once of %v", rcv.overlaps)
	}
	if !strings.Contains(logs.String(), "restarted") {
		t.Errorf("the restart is not logged:\n%s", logs.String())
	}
}
