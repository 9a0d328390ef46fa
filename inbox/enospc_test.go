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

	"forgehooks.dev/forgehooks/webhooks"
)

// TestInboxDiskFull: on a full disk (a small tmpfs) JetStream stops itself;
// deliveries are refused with an error that says so, and once space is
// freed the inbox restarts it and takes deliveries again, without a
// restart of the process. Needs root (to mount the tmpfs).
func TestInboxDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	if testing.Short() {
		t.Skip("fills a 256 MiB tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 140<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	in := openInbox(t, filepath.Join(dir, "inbox"), Options{MaxStoreBytes: 1 << 30, Logger: quietTo(t, &logs)})
	ctx := context.Background()
	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 1<<20)))
	}
	var err error
	stored := 0
	for i := 0; i < 200; i++ {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = in.Enqueue(c, webhooks.Delivery{ID: fmt.Sprintf("full-%d", i), Name: "push", Payload: body(i)})
		cancel()
		if err != nil {
			break
		}
		stored++
	}
	if err == nil {
		t.Fatal("200 MiB stored on a disk with about 116 MiB free")
	}
	t.Logf("%d deliveries of 1 MiB stored, then: %v", stored, err)
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
	if !strings.Contains(logs.String(), "restarted") {
		t.Errorf("the restart is not logged:\n%s", logs.String())
	}
}
