package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestServeHostileBounds attacks `forgehooks serve` (built here, run as a
// process of its own so that its peak RSS is its own) on 127.0.0.1 with 64
// connections each holding a forged 25 MiB body one byte short, then 1,000
// forged 1 MiB deliveries, then a header flood (about 1 MiB of 0xFF bytes per
// request), in text and JSON logs: peak RSS under 400 MiB, a valid delivery
// sent meanwhile answered (200, or 503 with Retry-After) within 2 s, and at
// most 4 KiB of log per rejected request. webhooks.TestHostileBounds does the
// same to the library's quick start.
func TestServeHostileBounds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("sends gigabytes over loopback")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads peak RSS from /proc")
	}
	const secret = "serve-flood-secret-0123456789"
	bin := filepath.Join(t.TempDir(), "forgehooks")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	start := func(t *testing.T, args ...string) *attack.Process {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		cmd.Env = append(os.Environ(), secretEnv+"="+secret, "GOMAXPROCS=2")
		p, err := attack.Start(cmd, regexp.MustCompile(`url"?[=:]"?http://([^/"]+)/`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	valid := func(t *testing.T, p *attack.Process) {
		t.Helper()
		ans, err := attack.Deliver(p.Addr, webhooks.DefaultPath, secret, 10*time.Second)
		if err != nil {
			t.Fatalf("valid delivery during the attack: %v", err)
		}
		t.Logf("valid delivery during the attack: %d (Retry-After %q) in %v", ans.Status, ans.RetryAfter, ans.Took.Round(time.Millisecond))
		if ans.Took > 2*time.Second || !(ans.Status == 200 || ans.Status == 503 && ans.RetryAfter != "") {
			t.Errorf("valid delivery answered %d (Retry-After %q) in %v; want 200, or 503 with Retry-After, within 2s", ans.Status, ans.RetryAfter, ans.Took)
		}
	}
	peak := func(t *testing.T, p *attack.Process) {
		t.Helper()
		n, err := p.PeakRSS()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("serve's peak RSS (VmHWM): %.1f MiB", float64(n)/(1<<20))
		if n > 400<<20 {
			t.Errorf("peak RSS %.1f MiB, want under 400 MiB", float64(n)/(1<<20))
		}
	}
	t.Run("64 held forged 25 MiB bodies", func(t *testing.T) {
		p := start(t)
		held, err := attack.HoldForgedBodies(p.Addr, webhooks.DefaultPath, 64, webhooks.DefaultMaxBodyBytes)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		time.Sleep(2 * time.Second)
		valid(t, p)
		peak(t, p)
	})
	t.Run("1000 forged deliveries", func(t *testing.T) {
		p := start(t)
		done := make(chan map[int]int, 1)
		go func() {
			statuses, err := attack.ForgedRequests(p.Addr, webhooks.DefaultPath, 1000, 8, 1<<20)
			if err != nil {
				t.Errorf("forged requests: %v", err)
			}
			done <- statuses
		}()
		time.Sleep(time.Second)
		valid(t, p)
		if statuses := <-done; statuses[400] != 1000 {
			t.Errorf("forged deliveries answered %v, want 1000 × 400", statuses)
		}
		peak(t, p)
	})
	for _, format := range []string{"text", "json"} {
		t.Run("header flood, "+format, func(t *testing.T) {
			p := start(t, "--json="+map[string]string{"text": "false", "json": "true"}[format])
			const n = 20
			before := p.OutputLen()
			statuses, err := attack.HeaderFlood(p.Addr, webhooks.DefaultPath, n, 1<<20-8<<10)
			if err != nil {
				t.Fatal(err)
			}
			if statuses[400] != n {
				t.Fatalf("header flood answered %v, want %d × 400", statuses, n)
			}
			time.Sleep(200 * time.Millisecond)
			logged := p.OutputLen() - before
			t.Logf("%d bytes of log for %d rejected requests: %d per request", logged, n, logged/n)
			if logged == 0 || logged/n > 4<<10 {
				t.Errorf("%d bytes of log per rejected request, want 1 to 4096; log:\n%.3000s", logged/n, p.Output())
			}
			peak(t, p)
		})
	}
}
