// Package runner runs the deliveries an inbox stored: it fetches them from
// the inbox stream's consumers, shares the workers fairly among tenants,
// leases each delivery while its handlers run, retries failures on the
// schedule, moves those that fail every attempt (or cannot run at all) to
// the dead letters, hands back at start the leases of the process before,
// sets right the statuses a crash left behind, and keeps the order of each
// key.
//
// It reaches the side that takes deliveries in (package inbox) only
// through Intake: the statuses, the dead letters and the watchers are the
// intake's records; the streams, consumers and the order keys' records are
// the runner's to read and write. A Runner holds no part of the intake, so
// an intake that must start its store again (a new connection, new stream
// handles) stops its Runner and starts a new one on the new Config.
package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// Intake is what a Runner needs of the side that takes deliveries in: the
// records it keeps of each delivery. Its methods are safe for concurrent
// use.
type Intake interface {
	// ReadStatus reads the status with key: nil and no error when there is
	// none (or it is not a status), nil and the error when it cannot be
	// read, which the runner never takes for none.
	ReadStatus(ctx context.Context, key string) (*stored.Status, error)
	// PutStatuses writes statuses, each under its key (keys of their own),
	// together: one record where the store allows, so that one wait covers
	// them all. It returns once the store answered; an error means any of
	// them may not have been written.
	PutStatuses(ctx context.Context, sts ...KeyedStatus) error
	// Bury writes the dead letter of the stored copy st.Seq of a delivery
	// (data and h as stored, token and key as StatusKey gives them), with
	// reason as its error, then its status (dead), and tells the watchers.
	// An error means the delivery must stay where it is, to be buried
	// again later.
	Bury(ctx context.Context, data []byte, h nats.Header, token, key string, st *stored.Status, reason string) error
	// IsDead reports whether the dead letters hold the copy seq of the
	// delivery with token.
	IsDead(ctx context.Context, token string, seq uint64) bool
	// RememberStored writes the dedupe records of the delivery stored at
	// seq, which a process that died may have left unwritten.
	RememberStored(ctx context.Context, seq uint64) error
	// Changed tells the watchers of the delivery stored at seq, with its
	// status st (nil: none yet).
	Changed(h nats.Header, data []byte, seq uint64, st *stored.Status)
	// Check says why a fetched delivery must not run at all, nil when it
	// may: the runner makes it a dead letter at once, with the error as its
	// reason, and runs no handler. Of one that may run it tells what it
	// knows of the payload (Checked).
	Check(h nats.Header, data []byte) (Checked, error)
}

// Checked is what Intake.Check knows of a delivery that may run.
type Checked struct {
	// Validated says that the payload is known to be one JSON object
	// whose top-level action (emitter.Event.Action) is Action: scanned by
	// Check, or by the intake and sealed since. The handlers then get it
	// without a second scan. False: the emitter scans it as it would any.
	Validated bool
	Action    string
}

// KeyedStatus is a status and the key it is written under
// (Intake.PutStatuses).
type KeyedStatus struct {
	Key    string
	Status *stored.Status
}

// Config is what a Runner runs: the inbox's options that concern running,
// the store's handles and the Intake. Every field but OrderBy and Logger is
// required.
type Config struct {
	// Name is the inbox's Name: it names the consumers and the subjects of
	// the parked deliveries.
	Name string
	// Embedded is set when the store is a server in this process, whose
	// directory lock proves the process before gone: its leases are handed
	// back at once.
	Embedded bool
	// Workers, RetryDelays, AckWait, OrderPartitions, OrderBy and
	// HandlerTimeout are the inbox's options of those names, defaults
	// applied (HandlerTimeout: 0 for none).
	Workers         int
	RetryDelays     []time.Duration
	AckWait         time.Duration
	OrderPartitions int
	OrderBy         func(webhooks.Delivery) string
	HandlerTimeout  time.Duration
	// Handle runs a delivery's handlers; its error fails the attempt.
	Handle func(ctx context.Context, d webhooks.Delivery) error
	// Logger receives the runner's lines. Nil: slog.Default().
	Logger *slog.Logger
	// The store: the connection, the inbox stream, the stream of parked
	// ordered deliveries and the bucket of the order keys' records.
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Inbox  jetstream.Stream
	Parked jetstream.Stream
	Keys   jetstream.KeyValue
	Intake Intake
}

// Runner runs the stored deliveries of one inbox: see the package
// documentation. Start it once; StopTaking, Wait and Stop end it.
type Runner struct {
	cfg Config

	sem      chan struct{} // one place per worker
	queue    *fairQueue    // the deliveries fetched and not started
	dequeued chan struct{} // a queued delivery started (dispatch waits on it when the queue is full)
	take     taking
	loops    sync.WaitGroup // the dispatch loops
	active   sync.WaitGroup // handlers running
	handlers taking         // the handlers' context, cancelled by Stop
	startSeq uint64         // the inbox stream's last sequence when the workers started
	ordered  *keyRunner     // runs the ordered deliveries (keys.go); nil without partitions
	// leaseWait is the shortest AckWait (ns) of the consumers taken from:
	// a consumer made by another process (a receiver's tenant consumer, a
	// worker with another --ack-wait) may lease for less than cfg.AckWait,
	// and a lease renewed too late runs its delivery twice.
	leaseWait    atomic.Int64
	leaseShorter chan struct{} // leaseWait went down

	mu      sync.Mutex
	closed  bool
	closing chan struct{}      // closed by StopTaking
	running map[string]bool    // keys of deliveries whose handlers run here
	sources map[string]*source // the tenants' sources fetched from, by consumer name (overflow.go)
	// idleAfter: a tenant's consumer idle this long is deleted (overflow.go).
	idleAfter time.Duration
}

// taking is a context and its cancel, with the consumers' iterators it ends.
type taking struct {
	ctx   context.Context
	stop  context.CancelFunc
	iters []jetstream.MessagesContext
}

func newTaking() taking {
	ctx, stop := context.WithCancel(context.Background())
	return taking{ctx: ctx, stop: stop}
}

// New returns a Runner on cfg; it runs nothing until Start.
func New(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Runner{cfg: cfg, sem: make(chan struct{}, cfg.Workers),
		queue: newFairQueue(), dequeued: make(chan struct{}, 1), running: map[string]bool{},
		sources: map[string]*source{}, idleAfter: overflowIdle,
		take: newTaking(), handlers: newTaking(), closing: make(chan struct{}), leaseShorter: make(chan struct{}, 1)}
	r.leaseWait.Store(int64(cfg.AckWait))
	return r
}

// leasedFor notes that a consumer taken from leases its deliveries for
// ackWait.
func (r *Runner) leasedFor(ackWait time.Duration) {
	for {
		cur := r.leaseWait.Load()
		if ackWait <= 0 || int64(ackWait) >= cur {
			return
		}
		if r.leaseWait.CompareAndSwap(cur, int64(ackWait)) {
			select {
			case r.leaseShorter <- struct{}{}:
			default:
			}
			return
		}
	}
}

// renewEvery is how often the leases of the deliveries held are renewed: a
// third of the shortest AckWait of the consumers taken from.
func (r *Runner) renewEvery() time.Duration {
	return max(time.Duration(r.leaseWait.Load())/3, time.Millisecond)
}

// WorkersConsumer names the consumer of the unordered deliveries of the
// inbox named name.
func WorkersConsumer(name string) string { return name + "_WORKERS" }

// OrderConsumerPrefix, and a partition's token, name that partition's
// consumer in the inbox named name.
func OrderConsumerPrefix(name string) string { return name + "_ORDER_" }

// Start creates the durable consumers and starts taking deliveries: the
// workers' consumer for unordered deliveries, and with ordering one
// consumer per partition, which hands out one delivery at a time (to
// whichever receiver of the cluster asks) and the next only once it is
// acknowledged or ended. An error leaves what began running: StopTaking
// and Wait end it.
func (r *Runner) Start(ctx context.Context) error {
	o := r.cfg
	parts, err := r.orderPartitions(ctx)
	if err != nil {
		return err
	}
	inSubj := o.Name + ".in."
	cfg := jetstream.ConsumerConfig{
		Durable:     WorkersConsumer(o.Name),
		Description: "forgehooks: runs each stored delivery's handlers",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     o.AckWait,
		// The runner counts attempts itself and moves a delivery to the
		// dead letters with its error; the server must not drop it silently.
		MaxDeliver: -1,
		// Deliveries waiting for a retry count as pending: a bound would
		// stop new deliveries while a downstream is down for long.
		MaxAckPending: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      o.Inbox.CachedInfo().Config.Replicas,
	}
	if len(parts) > 0 {
		// Ordered deliveries (a token more) are the partitions' alone.
		cfg.FilterSubject = inSubj + "*"
	} else {
		// Everything but the tenants' own subjects (three tokens more:
		// package overflow), which their consumers hand out.
		cfg.FilterSubjects = []string{inSubj + "*", inSubj + "*.*"}
	}
	cons, err := o.Inbox.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("inbox: creating consumer %s: %w", cfg.Durable, err)
	}
	r.leasedFor(cons.CachedInfo().Config.AckWait)
	ordered := make([]jetstream.Consumer, 0, len(parts))
	for _, p := range parts {
		pc := cfg
		pc.Durable = OrderConsumerPrefix(o.Name) + stored.PartitionToken(p)
		pc.Description = "forgehooks: admits the ordered deliveries of one partition to their keys, one at a time"
		pc.FilterSubject = inSubj + stored.PartitionToken(p) + ".*"
		// One at a time, in stored order: a delivery is handed out once
		// the one before it is admitted to its key (keys.go), which takes
		// a few record writes, not its handlers' time.
		pc.MaxAckPending = 1
		c, err := o.Inbox.CreateOrUpdateConsumer(ctx, pc)
		if err != nil {
			return fmt.Errorf("inbox: creating consumer %s: %w", pc.Durable, err)
		}
		ordered = append(ordered, c)
	}
	if o.Embedded {
		// Embedded: the directory lock proves that whoever held the leases
		// still pending is gone.
		for _, c := range append([]jetstream.Consumer{cons}, ordered...) {
			r.recoverLeases(ctx, c)
		}
	}
	// Deliveries stored before this start may have attempts recorded that
	// the server's count lost in a crash: handle reads their status.
	if info, err := o.Inbox.Info(ctx); err == nil {
		r.startSeq = info.State.LastSeq
	}
	if len(ordered) > 0 {
		r.ordered = newKeyRunner(r)
		if err := r.ordered.start(); err != nil {
			return err
		}
	}
	r.loops.Add(4)
	go r.dispatch(r.newSource(cons, false, time.Time{}))
	go r.schedule()
	go r.renewQueued()
	go r.watchOverflow()
	r.loops.Add(1)
	go func() {
		defer r.loops.Done()
		// The workers' consumer only: a partition's acknowledgement means
		// admitted to its key (keys.go), not run.
		r.reconcileStatuses(r.take.ctx, []jetstream.Consumer{cons})
	}()
	for _, c := range ordered {
		// The server hands out one at a time whatever the batch: a larger
		// one only saves the pull requests between deliveries.
		it, err := c.Messages(jetstream.PullMaxMessages(orderPullBatch), jetstream.PullExpiry(orderPullExpiry), jetstream.PullHeartbeat(orderPullHeartbeat))
		if err != nil {
			r.StopTaking()
			return fmt.Errorf("inbox: consuming: %w", err)
		}
		r.mu.Lock()
		r.take.iters = append(r.take.iters, it)
		closed := r.closed
		r.mu.Unlock()
		if closed {
			// StopTaking came first: it drained the iterators before this one.
			it.Drain()
		}
		r.loops.Add(1)
		go r.dispatchOrdered(it)
	}
	return nil
}

// A partition's pull request lives on the server leading its consumer and
// dies with it, unanswered when that server is killed: only two missed
// heartbeats tell the client to ask again. The library's default heartbeat,
// half of a 30 s expiry, stalled every partition led there for 30 s; with
// these, a partition asks the new leader within about 2 s, for a pull
// request every few seconds while idle.
const (
	orderPullExpiry    = 5 * time.Second
	orderPullHeartbeat = time.Second
)

// StopTaking stops taking deliveries: the consumers' iterators end and the
// deliveries fetched but not started are handed back by the loops. The
// handlers running go on (Wait waits for them). Safe to call more than once.
func (r *Runner) StopTaking() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	iters := r.take.iters
	r.mu.Unlock()
	r.take.stop()
	for _, it := range iters {
		it.Drain()
	}
}

// Wait waits, after StopTaking, for the loops and the handlers they started.
func (r *Runner) Wait() {
	r.loops.Wait()
	r.active.Wait()
}

// Stop cancels the context of the handlers still running.
func (r *Runner) Stop() { r.handlers.stop() }

// isClosed reports whether StopTaking was called.
func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// begin counts a handler (or an admission) as running, so that Wait waits
// for it; false once StopTaking was called, when nothing may begin.
func (r *Runner) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.active.Add(1)
	return true
}

// Runs reports whether the handlers of the delivery with status key key run
// in this Runner.
func (r *Runner) Runs(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[key]
}

// Owns reports whether owner, the Owner of an order key's record, names
// this Runner.
func (r *Runner) Owns(owner string) bool {
	return r.ordered != nil && r.ordered.id == owner
}

func (r *Runner) setRunning(key string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.running[key] = true
	} else {
		delete(r.running, key)
	}
}

// orderPartitions returns the partitions whose consumers exist, with those
// OrderBy needs: a partition left from a run with more partitions still has
// its deliveries handed out, one at a time.
func (r *Runner) orderPartitions(ctx context.Context) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	if r.cfg.OrderBy != nil {
		for p := range r.cfg.OrderPartitions {
			seen[p] = true
			out = append(out, p)
		}
	}
	names := r.cfg.Inbox.ConsumerNames(ctx)
	for name := range names.Name() {
		rest, ok := strings.CutPrefix(name, OrderConsumerPrefix(r.cfg.Name))
		if !ok || !stored.ValidPartitionToken(rest) {
			continue
		}
		p, _ := strconv.Atoi(rest[1:])
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("inbox: listing the consumers: %w", err)
	}
	return out, nil
}
