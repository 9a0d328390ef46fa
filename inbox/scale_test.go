package inbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

// Bounds of issue 25 for a receiver whose inbox holds 1,000,000 deliveries.
const (
	scaleMaxRSS    = 300 << 20
	scaleMaxOpen   = 5 * time.Second
	scaleMaxLookup = 100 * time.Millisecond
)

// scaleBody is a small delivery (about 1 KB).
var scaleBody = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"action":"opened","issue":{"number":1,"title":"scale","body":"`)
	for b.Len() < 900 {
		b.WriteString("lorem ipsum dolor sit amet ")
	}
	b.WriteString(`"},"repository":{"full_name":"o/r"},"sender":{"login":"u"}}`)
	return b.Bytes()
}()

// scaleResult is what the helper process measured on a filled inbox.
type scaleResult struct {
	Open     time.Duration `json:"open"`      // Open returning, workers started
	OpenCPU  time.Duration `json:"open_cpu"`  // the CPU time (all threads) Open used
	RSSOpen  int64         `json:"rss_open"`  // VmRSS once open, bytes
	RSSList  int64         `json:"rss_list"`  // after the list and one lookup
	RSS      int64         `json:"rss"`       // VmRSS after all the lookups
	RSSIdle  int64         `json:"rss_idle"`  // after the block caches expired (measured runs)
	HWM      int64         `json:"hwm"`       // VmHWM (peak RSS) of the process, bytes
	List     time.Duration `json:"list"`      // first page of List, the `inbox ls` path
	ListN    int           `json:"list_n"`    // records on that page
	GetP50   time.Duration `json:"get_p50"`   // Get by id, median of the lookups
	GetMax   time.Duration `json:"get_max"`   // the slowest lookup
	Holds    time.Duration `json:"holds_max"` // the slowest Holds
	Enqueued time.Duration `json:"enqueue"`   // a new delivery, stored on the full inbox
}

// TestScale fills an embedded inbox with N deliveries of about 1 KB
// (FORGEHOOKS_SCALE, default 10,000; handled by its workers, their ids and
// digests remembered, as a receiver leaves them), then opens it in a process
// of its own and measures what a receiver pays for the stored deliveries:
// the time Open takes, the process's RSS, the first page of List (the
// inspector's and `inbox ls`' path) and a lookup by id. The memory bound is
// checked always; the time bounds only when FORGEHOOKS_SCALE is set (an
// explicit measurement, not a timed unit test). FORGEHOOKS_SCALE_DIR keeps
// the filled store between runs. A long test: it runs under make test-long,
// or when FORGEHOOKS_SCALE is set.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a store")
	}
	n := 10_000
	measured := os.Getenv("FORGEHOOKS_SCALE") != ""
	if !measured {
		longtest.Require(t, "fills a store with 10,000 deliveries")
	}
	if measured {
		v, err := strconv.Atoi(os.Getenv("FORGEHOOKS_SCALE"))
		if err != nil || v <= 0 {
			t.Fatalf("FORGEHOOKS_SCALE=%q: want a count", os.Getenv("FORGEHOOKS_SCALE"))
		}
		n = v
	}
	base := os.Getenv("FORGEHOOKS_SCALE_DIR")
	if base == "" {
		base = t.TempDir()
	}
	dir := filepath.Join(base, fmt.Sprintf("scale%d", n))
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		start := time.Now()
		fillScale(t, dir, n)
		t.Logf("filled %d deliveries in %v", n, time.Since(start).Round(time.Millisecond))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestScaleHelperProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "INBOX_SCALE_DIR="+dir, "INBOX_SCALE_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	var r scaleResult
	found := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "scale-result "); ok {
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("helper process printed no result:\n%s", out)
	}
	t.Logf("%d stored: open %v (%v of CPU), RSS once open %d MiB, after a list and a lookup %d MiB, after 21 lookups %d MiB (peak %d MiB), idle %d MiB, list first page %v (%d records), get by id p50 %v max %v, holds max %v, a new delivery %v",
		n, r.Open.Round(time.Millisecond), r.OpenCPU.Round(time.Millisecond), r.RSSOpen>>20, r.RSSList>>20, r.RSS>>20, r.HWM>>20, r.RSSIdle>>20, r.List.Round(time.Microsecond), r.ListN,
		r.GetP50.Round(time.Microsecond), r.GetMax.Round(time.Microsecond), r.Holds.Round(time.Microsecond), r.Enqueued.Round(time.Microsecond))
	if r.ListN != delivery.DefaultListLimit {
		t.Errorf("list: %d records on the first page, want %d", r.ListN, delivery.DefaultListLimit)
	}
	if r.HWM > scaleMaxRSS {
		t.Errorf("peak RSS %d MiB, bound %d MiB", r.HWM>>20, scaleMaxRSS>>20)
	}
	if measured {
		if r.Open > scaleMaxOpen {
			t.Errorf("open took %v, bound %v", r.Open, scaleMaxOpen)
		}
		if r.List > scaleMaxLookup || r.GetMax > scaleMaxLookup || r.Holds > scaleMaxLookup {
			t.Errorf("list %v, get %v, holds %v: bound %v", r.List, r.GetMax, r.Holds, scaleMaxLookup)
		}
	}
}

// fillScale stores n deliveries in an embedded inbox in dir, each as Enqueue
// stores it (its subject, headers, id and digest remembered), published
// asynchronously in windows for speed, while the inbox's workers handle
// them; it returns once all are handled.
func fillScale(t *testing.T, dir string, n int) {
	os.RemoveAll(dir)
	wh := newWebhooks(t)
	// Deliveries, not attempts, are counted: one that runs twice (at least
	// once) must not stand for one that has not run yet.
	var handled atomic.Int64
	done := make([]atomic.Bool, n)
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		if i, err := strconv.ParseUint(e.ID[:8], 16, 64); err == nil && i < uint64(n) && !done[i].Swap(true) {
			handled.Add(1)
		}
		return nil
	})
	in, err := openStarted(context.Background(), Options{Dir: dir, Receiver: wh, Logger: quiet(t), MaxStoreBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	// A window of deliveries is published at once, then remembered with
	// the sequences the store gave them.
	const window = 500
	type pending struct {
		d             webhooks.Delivery
		token, digest string
		ack           jetstream.PubAckFuture
	}
	batch := make([]pending, 0, window)
	flush := func() {
		for _, p := range batch {
			select {
			case ack := <-p.ack.Ok():
				// As remember writes them, not waited for: the fill is
				// closed, which writes them, before it is measured.
				rec, _ := json.Marshal(seenID{Digest: p.digest, Seq: ack.Sequence, ID: p.d.ID})
				in.seen.PutAsync(rec, seenIDKey(p.token), seenBodyKey(p.digest))
			case err := <-p.ack.Err():
				t.Fatalf("storing %s: %v", p.d.ID, err)
			case <-time.After(time.Minute):
				t.Fatal("the store did not acknowledge a delivery within a minute")
			}
		}
		batch = batch[:0]
	}
	for i := range n {
		id := scaleID(i)
		d := webhooks.Delivery{ID: id, Name: "issues", Payload: unique(scaleBody, id)}
		p := pending{d: d, token: subjectToken(id), digest: bodyDigest(d.Payload)}
		var err error
		if p.ack, err = in.js.PublishMsgAsync(messageOf(t, in, d, p.digest)); err != nil {
			t.Fatal(err)
		}
		if batch = append(batch, p); len(batch) == window {
			flush()
		}
	}
	flush()
	<-in.js.PublishAsyncComplete()
	deadline := time.Now().Add(time.Duration(n/500+60) * time.Second)
	for handled.Load() < int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handled", handled.Load(), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := in.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// scaleID is the id of the i-th delivery of the fill, shaped as the forge's
// (a GUID: the length of its subjects and keys is what the store pays for).
func scaleID(i int) string {
	return fmt.Sprintf("%08x-cc78-11e3-81ab-4c9367dc0958", i)
}

// TestScaleHelperProcess is the process of TestScale that opens the filled
// inbox in $INBOX_SCALE_DIR as a receiver does (workers running) and prints
// its measurements.
func TestScaleHelperProcess(t *testing.T) {
	dir := os.Getenv("INBOX_SCALE_DIR")
	if dir == "" {
		t.Skip("the helper process of TestScale")
	}
	n, _ := strconv.Atoi(os.Getenv("INBOX_SCALE_N"))
	ctx := context.Background()
	wh := newWebhooks(t)
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	var r scaleResult
	start, cpu := time.Now(), cpuTime()
	in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, Logger: quiet(t), MaxStoreBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.Open, r.OpenCPU = time.Since(start), cpuTime()-cpu
	defer in.Close(ctx)
	r.RSSOpen = procStatus("VmRSS:")

	start = time.Now()
	recs, err := in.List(ctx, delivery.ListOptions{})
	r.List = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	r.ListN = len(recs)

	var gets []time.Duration
	for k := range 21 {
		id := scaleID((k * 7919 * (n/21 + 1)) % n)
		start := time.Now()
		rec, err := in.Get(ctx, id)
		gets = append(gets, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if rec.ID != id || rec.Status != delivery.StatusHandled {
			t.Fatalf("get %s: %s %s", id, rec.ID, rec.Status)
		}
		if k == 0 {
			r.RSSList = procStatus("VmRSS:")
		}
		start = time.Now()
		ok, err := in.Holds(ctx, id)
		r.Holds = max(r.Holds, time.Since(start))
		if err != nil || !ok {
			t.Fatalf("holds %s: %v %v", id, ok, err)
		}
	}
	sort.Slice(gets, func(i, j int) bool { return gets[i] < gets[j] })
	r.GetP50, r.GetMax = gets[len(gets)/2], gets[len(gets)-1]

	id := fmt.Sprintf("new-%d", time.Now().UnixNano())
	start = time.Now()
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: unique(scaleBody, id)}); err != nil {
		t.Fatal(err)
	}
	r.Enqueued = time.Since(start)
	r.RSS, r.HWM = procStatus("VmRSS:"), procStatus("VmHWM:")
	if os.Getenv("FORGEHOOKS_SCALE") != "" {
		// What stays: JetStream drops a block's cache 10 s after its last
		// use; what remains is the index of subjects and the process.
		time.Sleep(15 * time.Second)
		runtime.GC() // the second collection frees what sync.Pools kept
		debug.FreeOSMemory()
		r.RSSIdle = procStatus("VmRSS:")
	}
	if p := os.Getenv("INBOX_SCALE_HEAP"); p != "" {
		// Where the memory goes: go tool pprof -sample_index=inuse_space.
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		_ = pprof.WriteHeapProfile(f)
		f.Close()
	}
	b, _ := json.Marshal(r)
	fmt.Printf("scale-result %s\n", b)
}

// procStatus reads a kB field of /proc/self/status, in bytes (0 where
// there is no /proc).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
