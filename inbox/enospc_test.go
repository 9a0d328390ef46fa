//go:build linux

package inbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxDiskFull: on a full disk (a small tmpfs) JetStream stops itself;
// deliveries are refused with an error that says so, and once space is
// freed the inbox restarts it and takes deliveries again, without a
// restart of the process. Needs root (to mount the tmpfs). Long: the small
// disk of TestInboxDiskFullSmall checks the same in make test.
func TestInboxDiskFull(t *testing.T) {
	longtest.Require(t, "fills a 256 MiB tmpfs with 1 MiB deliveries")
	diskFull(t, 256, 140, 1<<20)
}

// TestInboxDiskFullSmall: the same on a 64 MiB disk, smaller than the free
// space a large disk must have before the store restarts (recoverFree): the
// threshold follows the disk's size.
func TestInboxDiskFullSmall(t *testing.T) {
	diskFull(t, 64, 36, 256<<10)
}

// diskFull fills a tmpfs of diskMiB (a file of fillerMiB, then deliveries of
// padding bytes) until the store stops, frees the file and waits for the
// store to take deliveries again.
func diskFull(t *testing.T, diskMiB, fillerMiB, padding int) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root to mount a %d MiB tmpfs", diskMiB)
	}
	if testing.Short() {
		t.Skipf("fills a %d MiB tmpfs", diskMiB)
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", diskMiB), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
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
