package webhooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/attack"
	"forgehooks.dev/forgehooks/webhooks"
)

// The bounds that TestHostileBounds holds a receiver to (issue 18).
const (
	maxPeakRSS         = 400 << 20
	maxAnswerTime      = 2 * time.Second
	maxLogPerRejection = 4 << 10
	floodSecret        = "flood-test-secret-0123456789"
)

// TestHostileBounds attacks the quick start's receiver (default options,
// webhooks/testdata/floodserver, built without -race and run as a process of
// its own so that its peak RSS is its own) on 127.0.0.1:
//
//   - 64 connections, each a forged 25 MiB body held one byte short;
//   - 1,000 forged 1 MiB deliveries while each error handler takes 20 s;
//   - forged deliveries with about 1 MiB of 0xFF bytes in their headers.
//
// Its peak RSS stays under 400 MiB, a valid delivery sent meanwhile on another
// connection is answered (200, or 503 with Retry-After) within 2 s, and a
// rejected request costs at most 4 KiB of log.
func TestHostileBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("sends gigabytes over loopback")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads peak RSS from /proc")
	}
	bin := filepath.Join(t.TempDir(), "floodserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/floodserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	start := func(t *testing.T, args ...string) *attack.Process {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "FORGE_WEBHOOK_SECRET="+floodSecret, "GOMAXPROCS=2")
		p, err := attack.Start(cmd, regexp.MustCompile(`listening on (\S+)`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	t.Run("64 held forged 25 MiB bodies", func(t *testing.T) {
		p := start(t)
		held, err := attack.HoldForgedBodies(p.Addr, webhooks.DefaultPath, 64, webhooks.DefaultMaxBodyBytes)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		time.Sleep(2 * time.Second) // let the bodies that fit the budget arrive
		checkValidAnswered(t, p)
		checkPeak(t, p)
	})
	t.Run("1000 forged deliveries, slow error handler", func(t *testing.T) {
		p := start(t, "-slow-onerror=20s")
		done := make(chan map[int]int, 1)
		go func() {
			statuses, err := attack.ForgedRequests(p.Addr, webhooks.DefaultPath, 1000, 8, 1<<20)
			if err != nil {
				t.Errorf("forged requests: %v", err)
			}
			done <- statuses
		}()
		time.Sleep(time.Second)
		checkValidAnswered(t, p)
		statuses := <-done
		t.Logf("answers to the forged deliveries: %v", statuses)
		if statuses[400] != 1000 {
			t.Errorf("forged deliveries answered %v, want 1000 × 400", statuses)
		}
		checkPeak(t, p)
	})
	t.Run("header flood", func(t *testing.T) {
		p := start(t)
		const n = 20
		before := p.OutputLen()
		statuses, err := attack.HeaderFlood(p.Addr, webhooks.DefaultPath, n, 1<<20-8<<10)
		if err != nil {
			t.Fatal(err)
		}
		if statuses[400] != n {
			t.Fatalf("header flood answered %v, want %d × 400", statuses, n)
		}
		time.Sleep(200 * time.Millisecond) // error handlers log on their own goroutines
		logged := p.OutputLen() - before
		t.Logf("%d bytes of log for %d rejected requests: %d per request", logged, n, logged/n)
		if logged/n > maxLogPerRejection || logged == 0 {
			t.Errorf("%d bytes of log per rejected request, want 1 to %d; log:\n%.3000s", logged/n, maxLogPerRejection, p.Output())
		}
		// The delivery ids are refused unread (not ids), so no header value
		// of these requests reaches the log.
		if !strings.Contains(p.Output(), "delivery id is not an id") {
			t.Error("the log does not say the delivery ids were refused")
		}
		checkPeak(t, p)
	})
}

func checkValidAnswered(t *testing.T, p *attack.Process) {
	t.Helper()
	ans, err := attack.Deliver(p.Addr, webhooks.DefaultPath, floodSecret, 10*time.Second)
	if err != nil {
		t.Fatalf("valid delivery during the attack: %v", err)
	}
	t.Logf("valid delivery during the attack: %d (Retry-After %q) in %v", ans.Status, ans.RetryAfter, ans.Took.Round(time.Millisecond))
	switch {
	case ans.Took > maxAnswerTime:
		t.Errorf("valid delivery answered in %v, want within %v", ans.Took, maxAnswerTime)
	case ans.Status == 200:
	case ans.Status == 503 && ans.RetryAfter != "":
	default:
		t.Errorf("valid delivery answered %d (Retry-After %q), want 200, or 503 with Retry-After", ans.Status, ans.RetryAfter)
	}
}

func checkPeak(t *testing.T, p *attack.Process) {
	t.Helper()
	peak, err := p.PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("receiver's peak RSS (VmHWM): %.1f MiB", float64(peak)/(1<<20))
	if peak > maxPeakRSS {
		t.Errorf("peak RSS %.1f MiB, want under %d MiB", float64(peak)/(1<<20), maxPeakRSS>>20)
	}
}
