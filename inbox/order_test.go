package inbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/longtest"
	"forgehooks.dev/forgehooks/webhooks"
)

var orderN = flag.Int("inbox.order.n", 3000, "deliveries the ordering tests send (the issue's full run: 20000); 500 with -short or -race unless set or FORGEHOOKS_LONG=1")

// scaled is the value of the count flag name, or small with -short or
// under the race detector when neither the flag nor FORGEHOOKS_LONG=1
// (make test-long) was set.
func scaled(name string, v, small int) int {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if !set && (testing.Short() || raceEnabled) && !longtest.Enabled() {
		return small
	}
	return v
}

func TestOrderKeys(t *testing.T) {
	tests := []struct {
		name, body                     string
		repository, installation, subj string
	}{
		{"pull request", `{"action":"synchronize","pull_request":{"id":7,"number":3},"repository":{"id":42},"installation":{"id":9}}`, "repository:42", "installation:9", "issue:42#3"},
		{"comment on the pull request", `{"action":"created","issue":{"id":8,"number":3,"pull_request":{"url":"x"}},"comment":{"id":1},"repository":{"id":42}}`, "repository:42", "", "issue:42#3"},
		{"review", `{"action":"submitted","review":{"id":5},"pull_request":{"id":7,"number":3},"repository":{"id":42}}`, "repository:42", "", "issue:42#3"},
		{"same number, another repository", `{"action":"created","issue":{"id":9,"number":3},"repository":{"id":43}}`, "repository:43", "", "issue:43#3"},
		{"pull request without a repository", `{"pull_request":{"id":7,"number":3}}`, "", "", ""},
		{"workflow job", `{"action":"queued","workflow_job":{"id":99,"run_id":5},"repository":{"id":42}}`, "repository:42", "", "workflow_job:99"},
		{"workflow run", `{"workflow_run":{"id":5},"repository":{"id":42}}`, "repository:42", "", "workflow_run:5"},
		{"check suite", `{"check_suite":{"id":6},"repository":{"id":42}}`, "repository:42", "", "check_suite:6"},
		{"push", `{"ref":"refs/heads/main","repository":{"id":42,"full_name":"o/r"}}`, "repository:42", "", "repository:42"},
		{"no repository", `{"zen":"Design for failure.","hook_id":1}`, "", "", ""},
		{"id not a number", `{"repository":{"id":"42"}}`, "", "", ""},
		{"not JSON", `{"repository":`, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := webhooks.Delivery{Payload: []byte(tt.body)}
			for _, c := range []struct {
				name string
				key  OrderKey
				want string
			}{{"repository", ByRepository, tt.repository}, {"installation", ByInstallation, tt.installation}, {"subject", BySubject, tt.subj}} {
				if got := c.key(d); got != c.want {
					t.Errorf("By%s = %q, want %q", c.name, got, c.want)
				}
				k, err := ParseOrderBy(c.name)
				if err != nil || k(d) != c.want {
					t.Errorf("ParseOrderBy(%q): %v", c.name, err)
				}
			}
		})
	}
	if k, err := ParseOrderBy(""); k != nil || err != nil {
		t.Errorf(`ParseOrderBy("") = %v, %v`, k, err)
	}
	if _, err := ParseOrderBy("sender"); err == nil {
		t.Error(`ParseOrderBy("sender") is no error`)
	}
}

// orderRun is one ordering test: deliveries over keys sent concurrently over
// HTTP to the receivers, handlers that fail at random, one receiver killed
// (or the embedded inbox restarted) in the middle.
type orderRun struct {
	t        *testing.T
	mu       sync.Mutex
	handled  map[string][]string // key → ids, in the order their handlers succeeded
	runs     atomic.Int64
	failures atomic.Int64
}

// orderReceiver is one receiver of the run; dead once killed: its handlers
// record nothing from then on.
type orderReceiver struct {
	in   *Inbox
	srv  *httptest.Server
	dead atomic.Bool
}

func orderKeyOf(id string) string {
	if p := strings.Split(id, "-"); len(p) > 2 {
		return "repository:" + p[1]
	}
	return ""
}

func orderPayload(id string) []byte {
	return fmt.Appendf(nil, `{"action":"edited","delivery":%q,"repository":{"id":%s,"full_name":"o/r"}}`, id, strings.Split(id, "-")[1])
}

// webhooks returns the Webhooks of a receiver: its handler fails 5 % of
// attempts and records the successes.
func (o *orderRun) webhooks(r *orderReceiver) *webhooks.Webhooks {
	wh := newWebhooks(o.t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 25))
	var rmu sync.Mutex
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		o.runs.Add(1)
		rmu.Lock()
		fail := rng.IntN(100) < 5
		rmu.Unlock()
		if fail {
			o.failures.Add(1)
			return fmt.Errorf("a failure at random")
		}
		if r.dead.Load() {
			return fmt.Errorf("the receiver is dead")
		}
		o.mu.Lock()
		k := orderKeyOf(e.ID)
		o.handled[k] = append(o.handled[k], e.ID)
		o.mu.Unlock()
		return nil
	})
	return wh
}

var orderRetryDelays = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond}

// send posts n deliveries over keys from 16 goroutines, each to a receiver
// taken at random among those alive; one answered other than 2xx is sent
// again (the forge's redelivery) until it is stored. kill is called once
// half are sent.
func (o *orderRun) send(n, keys int, targets func() []string, kill func()) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	work := make(chan int)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 25))
			for i := range work {
				id := fmt.Sprintf("o-%d-%06d", 1000+i%keys, i)
				for try := 0; ; try++ {
					ts := targets()
					code, _, _ := post(o.t, client, ts[rng.IntN(len(ts))], "issues", id, orderPayload(id), testSecret)
					if code/100 == 2 {
						break
					}
					refused.Add(1)
					if try > 200 {
						o.t.Errorf("%s was never stored", id)
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	for i := range n {
		if i == n/2 {
			kill()
		}
		work <- i
	}
	close(work)
	wg.Wait()
	o.t.Logf("%d deliveries sent; %d answers other than 2xx sent again", n, refused.Load())
}

// check reads the stored order of every key from the inbox stream and waits
// until every key's handled sequence is its stored sequence (a delivery may
// run again right after itself: at-least-once), or fails with the first
// difference.
func (o *orderRun) check(in *Inbox, n int, wait time.Duration) {
	t := o.t
	ctx := context.Background()
	stored := map[string][]string{}
	info, err := in.inbox.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := in.inbox.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("reading seq %d: %v", seq, err)
		}
		id := m.Header.Get(hdrDelivery)
		if ids[id] {
			t.Fatalf("%s stored twice", id)
		}
		ids[id] = true
		if !strings.HasPrefix(m.Subject, in.inSubj+"p") {
			t.Fatalf("%s stored on %s, outside any partition", id, m.Subject)
		}
		k := orderKeyOf(id)
		stored[k] = append(stored[k], id)
	}
	if len(ids) != n {
		t.Fatalf("%d deliveries stored, want %d", len(ids), n)
	}
	var diff string
	var again int
	deadline := time.Now().Add(wait)
	for {
		diff, again = "", 0
		o.mu.Lock()
		for k, want := range stored {
			got := slices.Compact(slices.Clone(o.handled[k]))
			again += len(o.handled[k]) - len(got)
			if !slices.Equal(got, want) {
				if len(got) < len(want) && slices.Equal(got, want[:len(got)]) {
					diff = fmt.Sprintf("key %s: %d of %d handled so far", k, len(got), len(want))
					continue
				}
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				o.mu.Unlock()
				t.Fatalf("key %s: handled out of the stored order at position %d: handled %v, stored %v", k, i, got[max(0, i-2):min(len(got), i+3)], want[max(0, i-2):min(len(want), i+3)])
			}
		}
		o.mu.Unlock()
		if diff == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if diff != "" {
		t.Fatalf("not all handled after %v: %s", wait, diff)
	}
	t.Logf("%d deliveries over %d keys handled in the stored order of each key; %d attempts, %d failed at random, %d ran again right after themselves (at-least-once)",
		n, len(stored), o.runs.Load(), o.failures.Load(), again)
}

// TestOrderEmbedded: the embedded inbox with OrderBy, restarted in the
// middle of the run while handlers fail at random.
func TestOrderEmbedded(t *testing.T) {
	n := scaled("inbox.order.n", *orderN, 500)
	o := &orderRun{t: t, handled: map[string][]string{}}
	dir := t.TempDir()
	var mu sync.Mutex
	var cur *orderReceiver
	open := func() {
		r := &orderReceiver{}
		wh := o.webhooks(r)
		r.in = openInbox(t, dir, Options{Receiver: wh, OrderBy: ByRepository, RetryDelays: orderRetryDelays})
		r.srv = receiver(t, wh, r.in)
		mu.Lock()
		cur = r
		mu.Unlock()
	}
	open()
	start := time.Now()
	o.send(n, 50, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return []string{cur.srv.URL}
	}, func() {
		mu.Lock()
		old := cur
		mu.Unlock()
		old.dead.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no drain: handlers under way are cut off
		old.in.Close(ctx)
		old.srv.Close()
		open()
		t.Logf("the inbox restarted after %v", time.Since(start).Round(time.Millisecond))
	})
	mu.Lock()
	in := cur.in
	mu.Unlock()
	o.check(in, n, 2*time.Minute)
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// TestOrderCluster: three nats-servers, two receivers with OrderBy, while
// handlers fail at random: one receiver killed (its connection dropped, its
// handlers cut off) in the middle of the run, or one node shut down.
func TestOrderCluster(t *testing.T) {
	for _, loss := range []string{"receiver killed", "node shut down"} {
		t.Run(loss, func(t *testing.T) { orderCluster(t, loss) })
	}
}

// orderRuns counts the runs of orderCluster.
var orderRuns atomic.Int32

func orderCluster(t *testing.T, loss string) {
	n := scaled("inbox.order.n", *orderN, 500)
	cl := sharedCluster(t)
	o := &orderRun{t: t, handled: map[string][]string{}}
	u := cl.urls()
	// A name of its own for each run: the cluster is shared, and a second
	// run (-count) would find the first one's deliveries and their ids.
	name := fmt.Sprintf("ORDER_%s_%d", strings.Fields(loss)[0], orderRuns.Add(1))
	var rs []*orderReceiver
	for i := range 2 {
		r := &orderReceiver{}
		wh := o.webhooks(r)
		// Receiver 1 on n2 first, receiver 2 on n3: node n1 is the one shut
		// down.
		r.in = openClusterInbox(t, []string{u[1+i], u[2-i], u[0]}, Options{Name: name, Receiver: wh, OrderBy: ByRepository, OrderPartitions: 8, RetryDelays: orderRetryDelays, AckWait: 2 * time.Second})
		r.srv = receiver(t, wh, r.in)
		rs = append(rs, r)
	}
	var killed atomic.Bool
	start := time.Now()
	o.send(n, 50, func() []string {
		if killed.Load() {
			return []string{rs[1].srv.URL}
		}
		return []string{rs[0].srv.URL, rs[1].srv.URL}
	}, func() {
		if loss == "node shut down" {
			cl.stop(0)
			t.Logf("node n1 shut down after %v", time.Since(start).Round(time.Millisecond))
			return
		}
		r := rs[0]
		r.dead.Store(true)
		killed.Store(true)
		// As a SIGKILL: the connection drops with the leases it holds.
		r.in.nc.Close()
		r.srv.CloseClientConnections()
		r.srv.Close()
		t.Logf("receiver 1 killed after %v", time.Since(start).Round(time.Millisecond))
	})
	if loss == "node shut down" {
		defer cl.start(0) // the cluster is shared
	}
	o.check(rs[1].in, n, 3*time.Minute)
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
	// The partitions' consumers hand out one delivery at a time.
	c, err := rs[1].in.inbox.Consumer(context.Background(), rs[1].in.orderConsumerPrefix()+"p0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.CachedInfo().Config; cfg.MaxAckPending != 1 || cfg.FilterSubject != rs[1].in.inSubj+"p0.*" {
		t.Errorf("partition consumer: MaxAckPending %d, filter %q", cfg.MaxAckPending, cfg.FilterSubject)
	}
}

// TestOrderFailureHoldsKey: a failing delivery holds the later deliveries of
// its key back through its retry, and releases them once it is a dead
// letter; Retry stores it again at the end of its key's order. Other keys
// run meanwhile.
func TestOrderFailureHoldsKey(t *testing.T) {
	wh := newWebhooks(t)
	var mu sync.Mutex
	var order []string
	failing := map[string]int{"o-1-a": 1, "o-1-dead": 99} // attempts that fail
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if failing[e.ID] > 0 {
			failing[e.ID]--
			order = append(order, e.ID+"!")
			return fmt.Errorf("fails")
		}
		order = append(order, e.ID)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, RetryDelays: []time.Duration{time.Second}, OrderPartitions: 4})
	ctx := context.Background()
	enqueue := func(ids ...string) {
		for _, id := range ids {
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
	// Key 1: a fails once, b waits for its retry. Key 2 (another
	// partition: 4 partitions, checked below) runs meanwhile.
	if partitionOf(orderKeyOf("o-1-a"), 4) == partitionOf(orderKeyOf("o-2-x"), 4) {
		t.Fatal("the two keys share a partition; pick others")
	}
	enqueue("o-1-a", "o-1-b", "o-2-x")
	waitFor(t, 10*time.Second, "key 1 handled", func() bool { return slices.Contains(got(), "o-1-b") })
	key1 := func() []string {
		return slices.DeleteFunc(got(), func(id string) bool { return strings.HasPrefix(id, "o-2-") })
	}
	want := []string{"o-1-a!", "o-1-a", "o-1-b"}
	if g := key1(); !slices.Equal(g, want) {
		t.Errorf("key 1 ran %v, want %v", g, want)
	}
	if g := got(); slices.Index(g, "o-2-x") > slices.Index(g, "o-1-a") {
		t.Errorf("key 2 waited for key 1's retry: %v", g)
	}
	// A delivery that fails every attempt holds its key until it is dead.
	enqueue("o-1-dead", "o-1-c")
	waitFor(t, 10*time.Second, "o-1-c handled", func() bool { return slices.Contains(got(), "o-1-c") })
	want = append(want, "o-1-dead!", "o-1-dead!", "o-1-c")
	if g := key1(); !slices.Equal(g, want) {
		t.Errorf("key 1 ran %v, want %v", g, want)
	}
	r, err := in.Get(ctx, "o-1-dead")
	if err != nil || r.Status != delivery.StatusDead {
		t.Fatalf("o-1-dead: %v %v", r.Status, err)
	}
	// Retried, it runs again, after the deliveries of its key stored before.
	mu.Lock()
	failing["o-1-dead"] = 0
	mu.Unlock()
	if err := in.Retry(ctx, "o-1-dead"); err != nil {
		t.Fatal(err)
	}
	enqueue("o-1-d")
	waitFor(t, 10*time.Second, "o-1-d handled", func() bool { return slices.Contains(got(), "o-1-d") })
	want = append(want, "o-1-dead", "o-1-d")
	if g := key1(); !slices.Equal(g, want) {
		t.Errorf("ran %v, want %v", g, want)
	}
	r, err = in.Get(ctx, "o-1-dead")
	if err != nil || r.Status != delivery.StatusHandled {
		t.Errorf("o-1-dead after Retry: %v %v", r.Status, err)
	}
	if ok, err := in.Holds(ctx, "o-1-b"); !ok || err != nil {
		t.Errorf("Holds(o-1-b) = %v, %v", ok, err)
	}
}

// TestOrderSwitched: ordering switched on for an inbox that ran without it,
// then off again with ordered deliveries still queued: every delivery runs
// exactly once, those left in the partitions included.
func TestOrderSwitched(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var mu sync.Mutex
	runs := map[string]int{}
	open := func(orderBy OrderKey, block chan struct{}) *Inbox {
		wh := newWebhooks(t)
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			if block != nil {
				// Cut off by the close: the attempt is not recorded, and
				// its outcome cannot be stored any more.
				<-block
				return errors.New("cut off")
			}
			mu.Lock()
			runs[e.ID]++
			mu.Unlock()
			return nil
		})
		in, err := openStarted(ctx, Options{Dir: dir, Receiver: wh, OrderBy: orderBy, Logger: quiet(t), RetryDelays: []time.Duration{}})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	enqueue := func(in *Inbox, ids ...string) {
		for _, id := range ids {
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ran := func(ids ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if runs[id] == 0 {
					return false
				}
			}
			return true
		}
	}
	in := open(nil, nil)
	enqueue(in, "o-1-a", "o-2-a")
	waitFor(t, 10*time.Second, "unordered deliveries run", ran("o-1-a", "o-2-a"))
	in.Close(ctx)

	// On: new deliveries go to the partitions. The handler blocks, so that
	// some are still queued when the inbox closes.
	block := make(chan struct{})
	in = open(ByRepository, block)
	enqueue(in, "o-1-b", "o-1-c", "o-2-b")
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	in.Close(cctx)
	cancel()
	close(block)

	// Off: the deliveries left in the partitions still run, once.
	in = open(nil, nil)
	defer in.Close(ctx)
	enqueue(in, "o-1-d")
	waitFor(t, 15*time.Second, "every delivery run", ran("o-1-a", "o-2-a", "o-1-b", "o-1-c", "o-2-b", "o-1-d"))
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
}

// FuzzOrderKeys: the built-in keys read any body without panicking; a key
// they find is its kind and a decimal id, and lands in a partition.
func FuzzOrderKeys(f *testing.F) {
	f.Add([]byte(`{"pull_request":{"id":7},"repository":{"id":42},"installation":{"id":9}}`))
	f.Add([]byte(`{"repository":{"id":-1},"issue":{"id":1e3}}`))
	f.Add([]byte(`{"workflow_job":{"id":"7"},"repository":{"id":99999999999999999999}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d := webhooks.Delivery{Payload: body}
		for _, k := range []OrderKey{ByRepository, ByInstallation, BySubject} {
			key := k(d)
			if key == "" {
				continue
			}
			kind, id, ok := strings.Cut(key, ":")
			if kind == "issue" {
				// <repository id>#<number>
				repo, n, found := strings.Cut(id, "#")
				_, err := strconv.ParseInt(repo, 10, 64)
				ok, id = ok && found && err == nil, n
			}
			if _, err := strconv.ParseInt(id, 10, 64); !ok || kind == "" || err != nil {
				t.Fatalf("key %q of %q", key, body)
			}
			if p := partitionOf(key, 16); p < 0 || p >= 16 || !validPartitionToken(partitionToken(p)) {
				t.Fatalf("partition %d of %q", p, key)
			}
		}
	})
}

// TestOrderFailureBlocksOnlyItsKey: 64 keys each with a delivery that keeps
// failing (its retry an hour away) cover every partition; then 2 deliveries
// for each of 64 other keys all run, in order, and the later deliveries of
// the failing keys wait.
func TestOrderFailureBlocksOnlyItsKey(t *testing.T) {
	wh := newWebhooks(t)
	var mu sync.Mutex
	handled := map[string][]string{}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		if strings.HasPrefix(e.ID, "o-1") { // keys 1000-1063: poisoned
			return errors.New("poisoned")
		}
		mu.Lock()
		defer mu.Unlock()
		k := orderKeyOf(e.ID)
		handled[k] = append(handled[k], e.ID)
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, RetryDelays: []time.Duration{time.Hour}})
	ctx := context.Background()
	enqueue := func(id string) {
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
			t.Fatal(err)
		}
	}
	parts := map[int]bool{}
	for k := range 64 {
		id := fmt.Sprintf("o-%d-a", 1000+k)
		parts[partitionOf(orderKeyOf(id), DefaultOrderPartitions)] = true
		enqueue(id)
	}
	if len(parts) != DefaultOrderPartitions {
		t.Fatalf("the poisoned keys cover %d partitions of %d", len(parts), DefaultOrderPartitions)
	}
	// Later deliveries of two poisoned keys: they must wait.
	enqueue("o-1000-b")
	enqueue("o-1001-b")
	start := time.Now()
	for k := range 64 {
		for _, n := range []string{"a", "b"} {
			enqueue(fmt.Sprintf("o-%d-%s", 2000+k, n))
		}
	}
	waitFor(t, 60*time.Second, "the 128 healthy deliveries handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, ids := range handled {
			n += len(ids)
		}
		return n >= 128
	})
	t.Logf("128 deliveries of 64 healthy keys handled in %v beside 64 failing keys", time.Since(start).Round(time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	for k := range 64 {
		key := fmt.Sprintf("repository:%d", 2000+k)
		if want := []string{fmt.Sprintf("o-%d-a", 2000+k), fmt.Sprintf("o-%d-b", 2000+k)}; !slices.Equal(handled[key], want) {
			t.Errorf("%s ran %v, want %v", key, handled[key], want)
		}
	}
	for _, id := range []string{"o-1000-b", "o-1001-b"} {
		r, err := in.Get(ctx, id)
		if err != nil || r.Status != delivery.StatusQueued {
			t.Errorf("%s behind its failing key: %v %v, want queued", id, r.Status, err)
		}
	}
	r, err := in.Get(ctx, "o-1000-a")
	if err != nil || r.Status != delivery.StatusRetrying {
		t.Errorf("o-1000-a: %v %v, want retrying", r.Status, err)
	}
}

// TestOrderFloodTakesItsTurn: a key with many deliveries queued does not
// hold back a key stored after them in the same partition: the later key
// runs while the flood is still running.
func TestOrderFloodTakesItsTurn(t *testing.T) {
	wh := newWebhooks(t)
	const flood = 300
	var floodDone atomic.Int64
	other := make(chan int64, 1)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		if orderKeyOf(e.ID) == "repository:1" {
			time.Sleep(5 * time.Millisecond)
			floodDone.Add(1)
			return nil
		}
		other <- floodDone.Load()
		return nil
	})
	in := openInbox(t, t.TempDir(), Options{Receiver: wh, OrderBy: ByRepository, OrderPartitions: 1, AllowRepeatedBodies: true})
	ctx := context.Background()
	for i := range flood {
		id := fmt.Sprintf("o-1-%04d", i)
		if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: orderPayload(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "o-2-x", Name: "issues", Payload: orderPayload("o-2-x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-other:
		t.Logf("the other key ran after %d of the flood's %d deliveries", n, flood)
		if n >= flood {
			t.Errorf("the other key waited for the whole flood of its partition")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the other key never ran")
	}
}
