package inbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// runner runs the stored deliveries of an Inbox (Start): it fetches them
// from the consumers, leases them while their handlers run, retries
// failures on the schedule, moves those that fail every attempt to the dead
// letters and keeps the order of each key. It reads and writes the records
// and streams of the Inbox it embeds; the Inbox itself only takes
// deliveries in and answers queries.
type runner struct {
	*Inbox

	sem        chan struct{} // one place per worker
	held       chan struct{} // one place per delivery fetched and not ended (fair.go)
	queue      *fairQueue    // the deliveries fetched and not started
	dequeued   chan struct{} // a queued delivery started (dispatch waits on it when the queue is full)
	takeCtx    context.Context
	takeStop   context.CancelFunc // ends the workers' pull requests
	iters      []jetstream.MessagesContext
	loops      sync.WaitGroup // the dispatch loops
	active     sync.WaitGroup // handlers running
	handlerCtx context.Context
	cancel     context.CancelFunc // cancels handlerCtx
	startSeq   uint64             // the inbox stream's last sequence when the workers started
	ordered    *keyRunner         // runs the ordered deliveries (keys.go); nil without partitions

	runMu   sync.Mutex
	running map[string]bool // keys of deliveries whose handlers run here
}

func newRunner(in *Inbox) *runner {
	hctx, cancel := context.WithCancel(context.Background())
	tctx, tstop := context.WithCancel(context.Background())
	w := in.opts.Workers
	held := w
	if in.ns != nil {
		held = w * (1 + fairWindow) // embedded only: see fair.go
	}
	return &runner{Inbox: in, sem: make(chan struct{}, w), held: make(chan struct{}, held),
		queue: newFairQueue(), dequeued: make(chan struct{}, 1), running: map[string]bool{},
		handlerCtx: hctx, cancel: cancel, takeCtx: tctx, takeStop: tstop}
}

// start creates the durable consumers and starts taking deliveries:
// the workers' consumer for unordered deliveries, and with ordering one
// consumer per partition, which hands out one delivery at a time (to
// whichever receiver of the cluster asks) and the next only once it is
// acknowledged or ended.
func (in *runner) start(ctx context.Context) error {
	o := in.opts
	parts, err := in.orderPartitions(ctx)
	if err != nil {
		return err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:     in.workersConsumer(),
		Description: "forgehooks: runs each stored delivery's handlers",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     o.AckWait,
		// The inbox counts attempts itself and moves a delivery to the dead
		// letters with its error; the server must not drop it silently.
		MaxDeliver: -1,
		// Deliveries waiting for a retry count as pending: a bound would
		// stop new deliveries while a downstream is down for long.
		MaxAckPending: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      o.Replicas,
	}
	if len(parts) > 0 {
		// Ordered deliveries (a token more) are the partitions' alone.
		cfg.FilterSubject = in.inSubj + "*"
	}
	cons, err := in.inbox.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("inbox: creating consumer %s: %w", cfg.Durable, err)
	}
	ordered := make([]jetstream.Consumer, 0, len(parts))
	for _, p := range parts {
		pc := cfg
		pc.Durable = in.orderConsumerPrefix() + stored.PartitionToken(p)
		pc.Description = "forgehooks: admits the ordered deliveries of one partition to their keys, one at a time"
		pc.FilterSubject = in.inSubj + stored.PartitionToken(p) + ".*"
		// One at a time, in stored order: a delivery is handed out once
		// the one before it is admitted to its key (keys.go), which takes
		// a few record writes, not its handlers' time.
		pc.MaxAckPending = 1
		c, err := in.inbox.CreateOrUpdateConsumer(ctx, pc)
		if err != nil {
			return fmt.Errorf("inbox: creating consumer %s: %w", pc.Durable, err)
		}
		ordered = append(ordered, c)
	}
	if in.ns != nil {
		// Embedded: the directory lock proves that whoever held the leases
		// still pending is gone.
		for _, c := range append([]jetstream.Consumer{cons}, ordered...) {
			in.recoverLeases(ctx, c)
		}
	}
	// Deliveries stored before this start may have attempts recorded that
	// the server's count lost in a crash: handle reads their status.
	if info, err := in.inbox.Info(ctx); err == nil {
		in.startSeq = info.State.LastSeq
	}
	if len(ordered) > 0 {
		in.ordered = newKeyRunner(in)
		if err := in.ordered.start(ctx); err != nil {
			return err
		}
	}
	in.loops.Add(3)
	go in.dispatch(cons)
	go in.schedule()
	go in.renewQueued()
	in.loops.Add(1)
	go func() {
		defer in.loops.Done()
		// The workers' consumer only: a partition's acknowledgement means
		// admitted to its key (keys.go), not run.
		in.reconcileStatuses(in.takeCtx, []jetstream.Consumer{cons})
	}()
	for _, c := range ordered {
		// The server hands out one at a time whatever the batch: a larger
		// one only saves the pull requests between deliveries.
		it, err := c.Messages(jetstream.PullMaxMessages(orderPullBatch))
		if err != nil {
			in.stopTaking()
			return fmt.Errorf("inbox: consuming: %w", err)
		}
		in.iters = append(in.iters, it)
		in.loops.Add(1)
		go in.dispatchOrdered(it)
	}
	return nil
}

// stopTaking stops the consumers' iterators; the deliveries fetched but not
// started are handed back by the loops.
func (in *runner) stopTaking() {
	in.takeStop()
	for _, it := range in.iters {
		it.Drain()
	}
}

// wait waits for the dispatch loops and the handlers they started.
func (in *runner) wait() {
	in.loops.Wait()
	in.active.Wait()
}

// stop cancels the context of the handlers still running.
func (in *runner) stop() { in.cancel() }

// isRunning reports whether the handlers of the delivery with status key
// key run in this process.
func (in *Inbox) isRunning(key string) bool {
	in.mu.Lock()
	r := in.started
	in.mu.Unlock()
	if r == nil {
		return false
	}
	return r.runs(key)
}

// runs reports whether the handlers of the delivery with status key key run
// in this runner.
func (in *runner) runs(key string) bool {
	in.runMu.Lock()
	defer in.runMu.Unlock()
	return in.running[key]
}

func (in *runner) setRunning(key string, on bool) {
	in.runMu.Lock()
	defer in.runMu.Unlock()
	if on {
		in.running[key] = true
	} else {
		delete(in.running, key)
	}
}
