package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/attack"
)

// indexKillMaxOpen is the bound of Open at FORGEHOOKS_SCALE stored after
// index writes were killed (the issue's: 1 s at 200,000).
const indexKillMaxOpen = time.Second

// TestIndexWriteKilled fills an embedded inbox (FORGEHOOKS_SCALE deliveries,
// default 10,000), then runs `forgehooks serve --inbox` on it, built from
// the tree, again and again: each run takes 2,000 deliveries, is sent
// SIGTERM (its Close writes the indexes) and SIGKILLed the moment an index's
// temporary file appears, while it is written. Then Open is measured in a
// process of its own (bounded by indexKillMaxOpen when FORGEHOOKS_SCALE is
// set, the runs of serve made after the fill has left JetStream's duplicate
// window), and no temporary file may be left in the directory. It runs only
// when FORGEHOOKS_SCALE or FORGEHOOKS_INDEX_KILL is set (a minute and more;
// over two when measured):
//
//	FORGEHOOKS_SCALE=200000 go test -run TestIndexWriteKilled -v -timeout 60m ./inbox
//	FORGEHOOKS_INDEX_KILL=1 go test -run TestIndexWriteKilled -v ./inbox
func TestIndexWriteKilled(t *testing.T) {
	if testing.Short() || os.Getenv("FORGEHOOKS_SCALE") == "" && os.Getenv("FORGEHOOKS_INDEX_KILL") == "" {
		t.Skip("fills a store and builds forgehooks: set FORGEHOOKS_INDEX_KILL=1 or FORGEHOOKS_SCALE=N")
	}
	if runtime.GOOS != "linux" {
		t.Skip("kills a process during a write, watched through the directory")
	}
	n := 10_000
	measured := os.Getenv("FORGEHOOKS_SCALE") != ""
	if measured {
		v, err := strconv.Atoi(os.Getenv("FORGEHOOKS_SCALE"))
		if err != nil || v <= 0 {
			t.Fatalf("FORGEHOOKS_SCALE=%q: want a count", os.Getenv("FORGEHOOKS_SCALE"))
		}
		n = v
	}
	dir := filepath.Join(t.TempDir(), "store")
	start := time.Now()
	fillScale(t, dir, n)
	t.Logf("filled %d deliveries in %v", n, time.Since(start).Round(time.Millisecond))
	if wait := time.Until(start.Add(jsDuplicates)); measured && wait > 0 {
		// A start reloads JetStream's duplicate window, the deliveries of
		// the last jsDuplicates: the fill, thousands a second, would stand
		// for minutes of a flood. The serves' deliveries stay in the window.
		t.Logf("waiting %v for the fill to leave JetStream's duplicate window", wait.Round(time.Second))
		time.Sleep(wait)
	}
	bin := filepath.Join(t.TempDir(), "forgehooks")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/forgehooks").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	cuts, tries, posted := 0, 0, 0
	for ; cuts < 3 && tries < 12; tries++ {
		cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--inbox", dir, "--max-store-bytes", "-1")
		cmd.Env = append(os.Environ(), "FORGE_WEBHOOK_SECRET="+testSecret)
		p, err := attack.Start(cmd, regexp.MustCompile(`url"?[=:]"?http://([^/"]+)/`))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		ids := make(chan string)
		for range 8 {
			wg.Go(func() {
				for id := range ids {
					code, _, err := attack.Post(client, p.Addr, "/api/forge/webhooks", testSecret, "issues", id, unique(scaleBody, id))
					if err != nil || code/100 != 2 {
						t.Errorf("post %s: %d %v", id, code, err)
					}
				}
			})
		}
		for i := range 2000 {
			ids <- fmt.Sprintf("kw-%d-%d", tries, i)
		}
		close(ids)
		wg.Wait()
		posted += 2000
		if t.Failed() {
			p.Stop()
			t.FailNow()
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := p.Done()
		// Killed the moment a temporary index file is seen.
		cut := false
	watch:
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			select {
			case <-exited:
				break watch
			default:
			}
			if len(temporaryFiles(t, dir)) > 0 {
				_ = cmd.Process.Kill()
				cut = true
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		<-exited
		if cut && len(temporaryFiles(t, dir)) > 0 {
			cuts++
		}
	}
	t.Logf("%d runs of serve, %d deliveries posted; %d index writes cut by SIGKILL, leaving their temporary files", tries, posted, cuts)
	if cuts == 0 {
		t.Skip("no index write was caught under way: nothing to measure")
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestScaleHelperProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "INBOX_SCALE_DIR="+dir, "INBOX_SCALE_N="+strconv.Itoa(n), "FORGEHOOKS_SCALE=")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	var r scaleResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "scale-result "); ok {
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.Open == 0 {
		t.Fatalf("helper process printed no result:\n%s", out)
	}
	left := temporaryFiles(t, dir)
	t.Logf("%d stored (+%d): Open after the cut writes took %v (%v of CPU); temporary files left: %v", n, posted, r.Open.Round(time.Millisecond), r.OpenCPU.Round(time.Millisecond), left)
	if len(left) > 0 {
		t.Errorf("temporary files left after a start: %v", left)
	}
	if measured && r.Open > indexKillMaxOpen {
		t.Errorf("Open took %v, bound %v", r.Open, indexKillMaxOpen)
	}
}

// temporaryFiles lists the temporary files of the index writes in dir.
func temporaryFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.index.*.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
