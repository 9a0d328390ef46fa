package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox/internal/clusterread"
	"forgehooks.dev/forgehooks/inbox/internal/embedded"
	"forgehooks.dev/forgehooks/inbox/internal/overflow"
	"forgehooks.dev/forgehooks/inbox/internal/quota"
	"forgehooks.dev/forgehooks/inbox/internal/recstore"
	"forgehooks.dev/forgehooks/inbox/internal/runner"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// Defaults of Options.
const (
	// DefaultName names the streams, buckets and subjects of an Inbox.
	DefaultName = "FORGEHOOKS"
	// DefaultDuplicateWindow is how long a delivery id (and its body's
	// digest) is remembered: the forge keeps its delivery log, and so can
	// redeliver, for 3 days on its public service. Self-hosted servers keep
	// it up to 7 days: set DuplicateWindow (serve --duplicate-window 7d) to
	// their retention.
	DefaultDuplicateWindow = 72 * time.Hour
	// DefaultHandledRetention is how long the body of a handled delivery is
	// kept (for the inspector page and Replay) before it is dropped; its id
	// and attempts stay for the duplicate window.
	DefaultHandledRetention = 24 * time.Hour
	// DefaultDeadRetention is how long a dead letter is kept, waiting for
	// Retry or a redelivery.
	DefaultDeadRetention = 30 * 24 * time.Hour
	// DefaultMaxStoreBytes bounds the store: in the embedded mode all of
	// JetStream's files in Dir, in a cluster the inbox stream.
	DefaultMaxStoreBytes = 1 << 30
	// DefaultMaxAge is how long a delivery stays in the stream.
	DefaultMaxAge = 7 * 24 * time.Hour
	// DefaultAckWait is how long a worker holds a delivery without telling the
	// server it is still at work before the server hands it out again.
	DefaultAckWait = 10 * time.Second
	// DefaultHandlerTimeout is Options.HandlerTimeout when zero: the time
	// the forward of `forgehooks serve --forward` and `work` allows each
	// POST.
	DefaultHandlerTimeout = 30 * time.Second
	// DefaultMaxPayload is the largest message the embedded server takes: the
	// forge's 25 MiB body limit with room for the headers.
	DefaultMaxPayload = 26 << 20
)

// maxPending bounds the unread data of a client of the embedded server,
// past which the server cuts it (as a slow consumer), losing the answers to
// its publishes: the workers pull at most twice DefaultMaxPayload of
// deliveries at a time, well under it.
const maxPending = 256 << 20

// DefaultRetryDelays is the retry schedule when Options.RetryDelays is nil:
// a delivery runs at most len(DefaultRetryDelays)+1 times, waiting these
// delays between attempts, over about 33 hours in all.
var DefaultRetryDelays = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Errors of an Inbox; those returned wrap them with context. The queries
// also return delivery.ErrNotFound and delivery.ErrNotDead.
var (
	// ErrClosed is returned by Enqueue and the queries once Close was called.
	ErrClosed = errors.New("inbox: closed")
	// ErrInUse is returned by Open when another process holds the directory.
	ErrInUse = errors.New("inbox: directory in use by another process")
)

// Receiver runs a delivery's handlers; *webhooks.Webhooks is one. The inbox
// hands it each stored delivery as one value, d, with its headers, tenant
// and attempt number; ctx carries nothing of the delivery (Webhooks puts d
// in its handlers' context, for webhooks.DeliveryFrom). An error fails the
// attempt: the delivery runs again after the next retry delay, or becomes a
// dead letter.
type Receiver interface {
	ReceiveDelivery(ctx context.Context, d webhooks.Delivery) error
}

// Options configures an Inbox. Exactly one of Dir and URLs is required.
type Options struct {
	// Dir is the directory of the embedded server's file store; it is
	// created (0700) when missing. One process at a time may open it. Open
	// refuses (ErrUnsafeDir) a Dir that belongs to another user or that its
	// group or others may write to.
	Dir string
	// URLs are the NATS servers of an existing cluster to connect to instead
	// of running one in the process. A user and password in them
	// (nats://user:pass@host) are used as Auth's, and never printed.
	URLs []string
	// Auth authenticates the connection to the cluster and secures it
	// (credentials file, nkey, user and password, TLS).
	Auth NATSAuth
	// NATSOptions are added to the connection's options in cluster mode,
	// after Auth's.
	NATSOptions []nats.Option
	// Key is the inbox key, at least 32 bytes (random; keep it secret): the
	// inbox seals every message it stores with an HMAC-SHA256 under it, and
	// its workers run only messages whose seal holds. Every process that
	// stores into or runs from one inbox (receivers, workers, the inbox
	// commands that store again) must be given the same key. Empty in the
	// embedded mode: a key is made at the first Open and kept in Dir
	// (inbox.key, mode 0600), read at later Opens. Empty with URLs: Open
	// fails, unless InsecureUnsealed.
	Key []byte
	// InsecureUnsealed, with URLs and no Key, stores messages without a
	// seal and runs any message found on the inbox's subjects: whoever may
	// publish on <Name>.in.> of the cluster can then make the workers run
	// (and forward) anything, with any tenant and headers. Use it only
	// where the cluster's permissions let nothing but the receivers publish
	// there (see SECURITY.md). Ignored when Key is set.
	InsecureUnsealed bool

	// Receiver runs the handlers of stored deliveries once Start is
	// called. Nil: Start fails with ErrNoReceiver, and the Inbox only
	// stores and answers queries (the CLI's use).
	Receiver Receiver
	// Workers is how many deliveries run at once (ordered ones run besides,
	// as many as the greater of Workers and OrderPartitions). When several tenants (webhooks.Tenants) have
	// deliveries waiting, each worker that frees up takes one of the tenant
	// with the fewest running, so that a tenant's backlog holds no more
	// than its share of the workers, however deep, embedded, in a cluster
	// and in a fleet: a tenant with a backlog stores on a subject of its
	// own, which the runners fetch from in turn with the others (see
	// Tenants in the package documentation). A receiver holds up to 4 ×
	// Workers deliveries of each of those sources, running or queued: a
	// worker that finishes one finds the next queued, and writes its
	// attempt with the status of the one before (one record for both).
	// Zero: 4 × GOMAXPROCS.
	Workers int
	// RetryDelays are the waits between a failed attempt and the next; after
	// the attempt that follows the last delay fails, the delivery is a dead
	// letter. Nil: DefaultRetryDelays. Empty: no retry.
	RetryDelays []time.Duration
	// AckWait is how long a running delivery is leased to its worker, which
	// renews the lease every third of it while the handlers run: it is the
	// time a receiver that died (or lost its connection) keeps its
	// deliveries, and its ordered keys, before they run elsewhere. An
	// embedded inbox hands back the leases of the process before it at
	// Open. The deliveries fetched and waiting for a worker (see
	// Workers) have their leases renewed the same way. The consumers are
	// made by whichever process comes first (a receiver with Workers 0
	// makes the tenants' consumers): a worker renews every third of the
	// shortest AckWait among the consumers it takes from, so processes
	// with different AckWaits never let a running delivery's lease lapse.
	// Zero: DefaultAckWait.
	AckWait time.Duration
	// HandlerTimeout bounds each attempt: the handlers' context is done
	// after it, and an attempt that returns an error then fails (and is
	// retried) with an error naming HandlerTimeout. An ordered delivery
	// whose handlers run past it, even ignoring their context, gives its
	// place back to the other keys and keeps only its own key (see the
	// package documentation, "Handlers that hang"). Zero:
	// DefaultHandlerTimeout. Negative: no bound.
	HandlerTimeout time.Duration

	// OrderBy, when set, runs the deliveries with the same key (see
	// OrderKey, ByRepository, ByInstallation, BySubject) one at a time, in
	// the order they were stored, across all the receivers of a cluster;
	// deliveries with different keys run in parallel. A delivery whose
	// attempt fails holds its own key back until it succeeds, becomes a
	// dead letter or is set aside (Skip): the later ones of its key wait
	// through its retry delays, and no other key waits for it (see the
	// package documentation, "Order"). Every receiver of a cluster must use
	// the same OrderBy and OrderPartitions. Nil: no order.
	OrderBy OrderKey
	// OrderPartitions is how many partitions (each a consumer that admits
	// its deliveries to their keys in stored order) the ordered deliveries
	// are spread over; the ordered deliveries that run at once are the
	// greater of it and Workers. Changing it lets the deliveries queued at
	// the time run out of order once. Zero: DefaultOrderPartitions.
	OrderPartitions int

	// Name prefixes the streams (Name_INBOX, Name_DEAD, Name_PARKED; in
	// the embedded mode Name_STATUS, Name_SEEN and their index files in
	// Dir), key-value buckets (Name_STATE, Name_KEYS; in a cluster
	// Name_STATUS, Name_SEEN), subjects and consumers. Zero: DefaultName.
	// Inboxes sharing a cluster and a Name share their deliveries.
	Name string
	// Replicas of each stream and bucket. Zero: 1 embedded; with URLs,
	// the replicas of the streams already there, else the number of
	// servers of the cluster the connection reached (1 for a server that
	// is not in a cluster), at most 3. A number the servers cannot hold
	// fails Open with a *ReplicasError.
	Replicas int
	// DuplicateWindow is how long a delivery id, and the digest of its
	// body, are remembered (in the inbox's own bucket, across restarts,
	// whether or not the body is still kept): the same id again is answered
	// duplicate (or, for a dead letter, runs again), and the same body under
	// another id is refused as a possible replay. Set it to the forge's
	// delivery-log retention. Zero: DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// AllowRepeatedBodies turns the replay guard off: a body stored already
	// under another delivery id is then stored and run again. The guard
	// exists because the signature covers the body only, so a captured
	// delivery can be replayed under any id; turn it off only when the
	// forge may send byte-identical bodies under different ids.
	AllowRepeatedBodies bool
	// MaxAge is the longest any delivery is kept in the stream (and its
	// status), whatever its state; at least DuplicateWindow. Zero:
	// DefaultMaxAge.
	MaxAge time.Duration
	// HandledRetention is how long the stored copy of a handled delivery
	// is kept before it is dropped, freeing its bytes; its id, digest and
	// attempts stay for the duplicate window. Deliveries not yet handled
	// are kept (up to MaxAge). Zero: DefaultHandledRetention.
	HandledRetention time.Duration
	// DeadRetention is how long a dead letter is kept. Zero:
	// DefaultDeadRetention.
	DeadRetention time.Duration
	// TenantMaxStoreBytes bounds the bytes of the bodies of one tenant's
	// deliveries (webhooks.Tenants) stored and not yet ended (handled, or a
	// dead letter): past it, that tenant's deliveries are refused
	// (ErrTenantFull, 503) while other tenants' are still stored, so that
	// one tenant's flood, or a downstream of its that is down, cannot fill
	// the store for all. Deliveries without a tenant are not bounded by
	// it. In a cluster each receiver counts from the store, again every
	// minute. Zero: half of MaxStoreBytes (no bound when MaxStoreBytes is
	// negative). Negative: no bound but MaxStoreBytes.
	TenantMaxStoreBytes int64
	// MaxStoreBytes bounds the store. In the embedded mode it bounds all of
	// JetStream's files in Dir (a sixteenth of it, at most 32 MiB, is kept
	// for statuses and dead letters, the rest for deliveries); in a cluster
	// it bounds the inbox stream. Once full, deliveries are refused (503,
	// logged with the reason) rather than older ones dropped, until handled
	// ones age out (HandledRetention). Zero: DefaultMaxStoreBytes.
	// Negative: no bound but the disk.
	MaxStoreBytes int64
	// Fsync, in the embedded mode, syncs every write to disk before it is
	// acknowledged. Slower; see the package documentation.
	Fsync bool

	// KeepSettings opens the streams and buckets that exist as they are:
	// their limits and retention (MaxStoreBytes, MaxAge, DuplicateWindow,
	// DeadRetention, ...) stay those that the receivers running the inbox
	// set, and only what is missing is made from these Options. For a
	// process that queries or operates an inbox (forgehooks inbox ...),
	// whose own defaults must not rewrite a fleet's settings.
	KeepSettings bool

	// Logger receives the inbox's lines. Nil: slog.Default().
	Logger *slog.Logger
}

// Inbox stores deliveries in JetStream, answers queries about them and,
// once started (Start), runs their handlers. It implements webhooks.Inbox.
// It is safe for concurrent use.
//
// Its jobs live apart: taking deliveries in and answering queries
// (Inbox's own methods), running them (package inbox/internal/runner,
// which reaches the Inbox only through runner.Intake, intake.go), the
// records of each delivery (records.go, inbox/internal/recstore) and the
// encoding of a stored message (inbox/internal/stored).
type Inbox struct {
	opts Options
	log  *slog.Logger
	conn
	streams
	count counters
	store storeWatch

	watchers delivery.Watchers // Watch
	scan     chan struct{}     // one header read at a time (headers)

	mu      sync.Mutex
	closed  bool
	closing chan struct{}  // closed by Close
	enq     sync.WaitGroup // Enqueue calls under way
	started *runner.Runner // set by Start
	quota   *quota.Quota   // nil without a bound per tenant (quota.go)
	key     []byte         // the inbox key (seal.go); nil: unsealed
}

// conn is an Inbox's connection to its store.
type conn struct {
	ns     *embedded.Server // nil in cluster mode
	nc     *nats.Conn
	js     jetstream.JetStream
	unlock func() // releases Dir (embedded)
	// sending counts the bytes of the publishes under way on nc: an
	// answer waits behind them (publish.go, attemptBound).
	sending atomic.Int64
}

// streams are the streams and records an Inbox keeps, and the subjects of
// its deliveries.
type streams struct {
	inbox  jetstream.Stream
	dead   jetstream.Stream
	status recstore.Records // each delivery's status, by status key
	seen   recstore.Records // dedupe records (seen.go)
	state  jetstream.KeyValue
	// The order keys' records and parked deliveries (inbox/internal/runner/keys.go).
	keyBucket jetstream.KeyValue
	parked    jetstream.Stream

	inSubj, deadSubj string
	share            *overflow.Router // the subject of each unordered delivery
}

var _ webhooks.Inbox = (*Inbox)(nil)

// Open starts (or connects to) the store, creates the streams and buckets
// when missing and reads what a run before left (the embedded index). It
// runs no handler: the Inbox takes deliveries in (Enqueue) and answers
// queries; Start runs the workers. In a NATS cluster (URLs) each of its
// requests is tried again while the cluster does not answer (a leader being
// elected, a server restarting), until ctx ends (30 s when ctx has no
// deadline); the error then says the cluster did not answer and wraps
// ctx's.
func Open(ctx context.Context, opts Options) (*Inbox, error) {
	if (opts.Dir == "") == (len(opts.URLs) == 0) {
		return nil, errors.New("inbox: exactly one of Options.Dir and Options.URLs must be set")
	}
	if err := checkKeyOptions(opts); err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if strings.ContainsAny(opts.Name, ".*> \t") {
		return nil, fmt.Errorf("inbox: Options.Name %q: use letters, digits, - and _", opts.Name)
	}
	if opts.DuplicateWindow == 0 {
		opts.DuplicateWindow = DefaultDuplicateWindow
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.HandledRetention == 0 {
		opts.HandledRetention = DefaultHandledRetention
	}
	if opts.DeadRetention == 0 {
		opts.DeadRetention = DefaultDeadRetention
	}
	if opts.MaxStoreBytes == 0 {
		opts.MaxStoreBytes = DefaultMaxStoreBytes
	}
	if opts.DuplicateWindow < 0 || opts.HandledRetention < 0 || opts.DeadRetention < 0 {
		return nil, errors.New("inbox: DuplicateWindow, HandledRetention and DeadRetention must not be negative")
	}
	if opts.MaxAge < opts.DuplicateWindow {
		return nil, fmt.Errorf("inbox: Options.MaxAge %v is shorter than the duplicate window %v", opts.MaxAge, opts.DuplicateWindow)
	}
	if opts.RetryDelays == nil {
		opts.RetryDelays = DefaultRetryDelays
	}
	for _, d := range opts.RetryDelays {
		if d < 0 {
			return nil, fmt.Errorf("inbox: negative retry delay %v", d)
		}
	}
	if opts.AckWait == 0 {
		opts.AckWait = DefaultAckWait
	}
	if opts.OrderPartitions <= 0 {
		opts.OrderPartitions = DefaultOrderPartitions
	}
	switch {
	case opts.HandlerTimeout == 0:
		opts.HandlerTimeout = DefaultHandlerTimeout
	case opts.HandlerTimeout < 0:
		opts.HandlerTimeout = 0
	}
	if opts.Workers <= 0 {
		opts.Workers = 4 * runtime.GOMAXPROCS(0)
	}
	defaultReplicas := opts.Replicas == 0
	if defaultReplicas {
		opts.Replicas = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	in := &Inbox{opts: opts, log: opts.Logger, closing: make(chan struct{}), scan: make(chan struct{}, 1),
		streams: streams{inSubj: opts.Name + ".in.", deadSubj: opts.Name + ".dead.",
			share: &overflow.Router{Name: opts.Name, Workers: runner.WorkersConsumer(opts.Name), AckWait: opts.AckWait, Logger: opts.Logger}}}
	if err := in.connect(); err != nil {
		return nil, err
	}
	if err := in.loadKey(); err != nil {
		in.shutdown()
		return nil, err
	}
	if tmax := opts.TenantMaxStoreBytes; tmax > 0 || tmax == 0 && opts.MaxStoreBytes > 0 {
		if tmax == 0 {
			tmax = opts.MaxStoreBytes / 2
		}
		in.quota = quota.New(tmax)
	}
	in.store = storeWatch{ns: in.ns, dir: opts.Dir}
	if in.ns != nil {
		in.store.disk = &embedded.Recovery{Dir: opts.Dir, MaxStore: max(opts.MaxStoreBytes, 0), MaxMessage: DefaultMaxPayload,
			Restart: in.restartStore, Closing: in.closing, Log: opts.Logger}
	}
	if in.ns == nil {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, clusterread.Patience)
			defer cancel()
		}
	}
	if defaultReplicas && in.ns == nil {
		if err := in.chooseReplicas(ctx); err != nil {
			in.shutdown()
			return nil, err
		}
	}
	if err := in.setup(ctx); err != nil {
		in.shutdown()
		return nil, replicasError(err, in.opts.Replicas, defaultReplicas, in.nc)
	}
	return in, nil
}

// Workers returns how many deliveries the workers run at once:
// Options.Workers, or its default.
func (in *Inbox) Workers() int { return in.opts.Workers }

// Replicas returns the replicas of the inbox's streams and buckets:
// Options.Replicas, or what Open chose for it.
func (in *Inbox) Replicas() int { return in.opts.Replicas }

// ErrNoReceiver is returned by Start when Options.Receiver is nil.
var ErrNoReceiver = errors.New("inbox: Start: Options.Receiver is nil: nothing to run the deliveries")

// Start runs the workers: they take the stored deliveries (those stored
// before included) and run Options.Receiver's handlers, retrying failures
// on the schedule of Options.RetryDelays and moving those that fail every
// attempt to the dead letters; with Options.OrderBy, the deliveries of each
// key one at a time. It also starts the janitor that drops the stored
// copies of handled deliveries past HandledRetention: an Inbox that is never
// started only takes deliveries in and answers queries, and frees nothing
// that a running receiver may still need.
//
// In the embedded mode Start first hands back at once the deliveries the
// process before held (the directory lock proves it gone), so that they run
// again without waiting for their leases to run out.
//
// Start returns ErrNoReceiver without a Receiver, ErrClosed after Close,
// and an error when called twice or when the consumers cannot be created
// (ctx bounds that). Close stops the workers.
func (in *Inbox) Start(ctx context.Context) error {
	if in.opts.Receiver == nil {
		return ErrNoReceiver
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.closed:
		return ErrClosed
	case in.started != nil:
		return errors.New("inbox: Start called twice")
	}
	// Set first: Close stops what a failed start began.
	in.started = runner.New(in.runnerConfig())
	if err := in.started.Start(ctx); err != nil {
		return err
	}
	in.startJanitor()
	return nil
}

// runnerConfig is what Start runs the workers on.
func (in *Inbox) runnerConfig() runner.Config {
	o := in.opts
	return runner.Config{
		Name: o.Name, Embedded: in.ns != nil,
		Workers: o.Workers, RetryDelays: o.RetryDelays, AckWait: o.AckWait,
		OrderPartitions: o.OrderPartitions, OrderBy: o.OrderBy, HandlerTimeout: o.HandlerTimeout,
		Handle: o.Receiver.ReceiveDelivery,
		Logger: in.log, Conn: in.nc, JS: in.js,
		Inbox: in.inbox, Parked: in.parked, Keys: in.keyBucket,
		Intake: intake{in},
	}
}

// RunsWorkers reports whether Start has run this inbox's workers in this
// process: an inline webhooks.Middleware refuses such an inbox (see
// webhooks.WorkerInbox), whose workers would run after its answers.
func (in *Inbox) RunsWorkers() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.started != nil
}

// connect starts the embedded server or dials the cluster.
func (in *Inbox) connect() error {
	o := in.opts
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		if err := checkDir(o.Dir); err != nil {
			return err
		}
		unlock, err := lockDir(o.Dir)
		if err != nil {
			return err
		}
		in.unlock = unlock
		ns, err := embedded.Start(server.Options{
			ServerName: "forgehooks-inbox",
			JetStream:  true,
			StoreDir:   o.Dir,
			DontListen: true,
			NoSigs:     true,
			NoLog:      true,
			MaxPayload: DefaultMaxPayload,
			MaxPending: maxPending,
			SyncAlways: o.Fsync,

			JetStreamMaxStore: max(o.MaxStoreBytes, 0),
		}, 30*time.Second)
		if err != nil {
			unlock()
			return err
		}
		in.ns = ns
		// The connection comes back by itself when the store restarts
		// (store.go); while it is away a publish fails at once.
		nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("forgehooks-inbox"), in.asyncErrors(),
			nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(10*time.Millisecond, 0),
			nats.ReconnectBufSize(-1))
		if err != nil {
			ns.Shutdown()
			unlock()
			return fmt.Errorf("inbox: connecting to the embedded server: %w", err)
		}
		in.nc = nc
	} else {
		urls, auth, err := o.Auth.natsOptions(o.URLs)
		if err != nil {
			return err
		}
		nopts := append([]nats.Option{
			nats.Name("forgehooks-inbox"),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(250 * time.Millisecond),
			// While disconnected a publish fails at once (503) instead of
			// waiting in a buffer to be sent after the 503 went out.
			nats.ReconnectBufSize(-1),
			in.asyncErrors(),
		}, auth...)
		nopts = append(nopts, o.NATSOptions...)
		nc, err := nats.Connect(strings.Join(urls, ","), nopts...)
		if err != nil {
			return fmt.Errorf("inbox: connecting to NATS at %s: %w", RedactURL(strings.Join(urls, ",")), err)
		}
		in.nc = nc
	}
	jsOpts := []jetstream.JetStreamOpt{jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
		in.log.Warn("inbox: writing a delivery's record", "subject", m.Subject, "error", err)
	})}
	if in.ns != nil {
		// The embedded index waits for these answers (recstore.Indexed).
		jsOpts = append(jsOpts, jetstream.WithPublishAsyncTimeout(recstore.AsyncAckWait))
	}
	js, err := jetstream.New(in.nc, jsOpts...)
	if err != nil {
		in.shutdown()
		return fmt.Errorf("inbox: %w", err)
	}
	in.js = js
	return nil
}

// asyncErrors logs the connection's asynchronous errors instead of
// nats.go's default, which prints them to stderr. A slow consumer is logged
// at most once a minute, with how many times it happened: the workers'
// iterator meets it while every worker is busy (its buffer, as large as the
// deliveries it asks for, is full when the server's status messages come),
// which loses nothing (a delivery dropped would come back after AckWait).
func (in *Inbox) asyncErrors() nats.Option {
	var mu sync.Mutex
	var last time.Time
	var slow int
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subj := ""
		if sub != nil {
			subj = sub.Subject
		}
		if errors.Is(err, nats.ErrSlowConsumer) {
			mu.Lock()
			slow++
			if time.Since(last) < time.Minute {
				mu.Unlock()
				return
			}
			n := slow
			slow, last = 0, time.Now()
			mu.Unlock()
			in.log.Warn("inbox: NATS connection (logged at most once a minute)", "subscription", subj, "error", err, "times", n)
			return
		}
		in.log.Warn("inbox: NATS connection", "subscription", subj, "error", err)
	})
}

// Enqueue stores d and returns Enqueued once JetStream has
// acknowledged it. When the inbox has stored d.ID within the duplicate
// window it stores nothing and returns Duplicate, unless that delivery is a
// dead letter with the same body, which then runs again on a fresh schedule
// (Requeued). A body stored under another id within the window is a possible
// replay: Duplicate, logged, counted (unless Options.AllowRepeatedBodies). A
// delivery with an empty ID is always stored. The error, when it cannot be
// stored within ctx (store unavailable, full, a full disk), says why;
// nothing was acknowledged then.
func (in *Inbox) Enqueue(ctx context.Context, d webhooks.Delivery) (webhooks.EnqueueResult, error) {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return 0, ErrClosed
	}
	in.enq.Add(1)
	in.mu.Unlock()
	defer in.enq.Done()
	if d.Name == "" {
		return 0, errors.New("inbox: delivery without an event name")
	}
	g, err := in.scanBody(d)
	if err != nil {
		return 0, err
	}
	token := stored.SubjectToken(stored.DeliveryKey(d.Tenant, d.ID))
	var digest string
	if d.ID != "" {
		digest = tenantDigest(d.Tenant, d.Payload)
		if res, ok, err := in.known(ctx, d, token, digest); ok || err != nil {
			return res, in.store.explain(err)
		}
	}
	ended, err := in.checkTenant(ctx, d.Tenant, int64(len(d.Payload)))
	if err != nil {
		return 0, fmt.Errorf("inbox: storing delivery %q (event %q): %w", d.ID, d.Name, err)
	}
	msg := in.message(d, digest, g)
	ack, err := in.publishRetrying(ctx, msg)
	if err != nil && d.ID != "" {
		// The store may have taken it and its answer been lost (a timeout, a
		// connection cut): a 503 must mean "not stored".
		ack = in.landed(msg, d.ID)
	}
	if ack == nil || ack.Duplicate {
		ended(0)
		in.share.Stored(d.Tenant, msg.Subject, 0)
	} else {
		ended(ack.Sequence)
		in.share.Stored(d.Tenant, msg.Subject, ack.Sequence)
	}
	if ack == nil {
		return 0, fmt.Errorf("inbox: storing delivery %q (event %q): %w", d.ID, d.Name, in.describePublishError(err))
	}
	if ack.Duplicate {
		in.duplicateAtOnce(ctx, d, ack.Sequence)
		// The one who stored it may have died before its records were
		// written: a duplicate answered now must stay one.
		if err := in.rememberDuplicate(ctx, d, token, digest, ack.Sequence); err != nil {
			return 0, fmt.Errorf("inbox: recording delivery %q (stored at %d): %w", d.ID, ack.Sequence, in.describePublishError(err))
		}
		return webhooks.Duplicate, nil
	}
	if d.ID != "" {
		// Stored, but answered 2xx only once its id is durably known: a
		// 503 now makes the forge send it again, which JetStream's own
		// window (or the body's record) answers as a duplicate.
		if err := in.remember(ctx, d.ID, token, digest, ack.Sequence); err != nil {
			return 0, fmt.Errorf("inbox: recording delivery %q (stored at %d): %w", d.ID, ack.Sequence, in.describePublishError(err))
		}
	}
	if in.watchers.Active() {
		in.notify(stored.Record(msg.Header, nil, len(d.Payload), ack.Sequence, nil))
	}
	return webhooks.Enqueued, nil
}

// message builds the stored message of d: its subject, the request's headers
// and the inbox's own.
func (in *Inbox) message(d webhooks.Delivery, digest string, g ingest) *nats.Msg {
	received := d.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	msg := &nats.Msg{Data: d.Payload, Header: stored.RequestHeader(d.Header)}
	in.order(msg, g.key, d.Tenant)
	// The inbox's headers take their one-value slices from one array (room
	// for all 13 below): a slice each (nats.Header.Set) was a dozen
	// allocations a delivery.
	vals := make([]string, 0, 13)
	set := func(k, v string) {
		vals = append(vals, v)
		n := len(vals)
		msg.Header[k] = vals[n-1 : n : n]
	}
	set(stored.HeaderVersion, "1")
	set(stored.HeaderEvent, d.Name)
	if d.ID != "" {
		set(stored.HeaderDelivery, d.ID)
	}
	if d.Tenant != "" {
		set(stored.HeaderTenant, d.Tenant)
	}
	stored.SetMeta(set, g.action, g.repository, g.sender, len(d.Payload))
	if d.Signature != "" {
		set(stored.HeaderSignature, d.Signature)
	}
	set(stored.HeaderReceivedAt, received.UTC().Format(time.RFC3339Nano))
	if msg.Header.Get("Content-Type") == "" {
		set("Content-Type", "application/json")
	}
	// JetStream's own duplicate window (jsDuplicates) makes two stores of
	// one delivery at the same moment store it once, before the writes of
	// remember land: keyed by the body's digest when the replay guard is on,
	// so that it also holds for one body under two ids.
	switch {
	case d.ID != "" && !in.opts.AllowRepeatedBodies:
		set(jetstream.MsgIDHeader, "b:"+digest)
	case d.ID != "":
		set(jetstream.MsgIDHeader, stored.DeliveryKey(d.Tenant, d.ID))
	}
	in.seal(msg)
	return msg
}

// Error codes of the NATS server that the client names no constant for.
const (
	errCodeInsufficientResources jetstream.ErrorCode = 10023
	errCodeStoreFailed           jetstream.ErrorCode = 10077
)

// describePublishError adds what a reader needs to a publish error: which
// bound is reached, or why the store did not answer.
func (in *Inbox) describePublishError(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "maximum"):
		return fmt.Errorf("the store is full (Options.MaxStoreBytes, serve --max-store-bytes, %d bytes; handled deliveries free their space after HandledRetention, %v): %w",
			in.opts.MaxStoreBytes, in.opts.HandledRetention, err)
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeStoreFailed || apiErr.ErrorCode == errCodeInsufficientResources):
		return fmt.Errorf("the store could not write it (disk full, or JetStream's storage limit reached): %w", err)
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Errorf("the delivery is larger than the server's max_payload: %w", err)
	case errors.Is(err, errStoreDown), errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return in.store.explain(err)
	}
	return err
}

// Close drains the inbox: Enqueue fails from now on (the middleware answers
// 503), workers take no new delivery, and Close waits for the handlers
// running until ctx is done. Deliveries not finished by then stay
// unacknowledged and run again after the next start. Then the connection
// (and the embedded server) are closed. The error is ctx's when handlers were
// still running.
func (in *Inbox) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	close(in.closing)
	started := in.started // no restart replaces it once closed (store.go)
	in.mu.Unlock()
	// Deliveries fetched but not started are handed back by the loops.
	if started != nil {
		started.StopTaking()
	}
	done := make(chan struct{})
	go func() {
		in.enq.Wait()
		if started != nil {
			started.Wait()
		}
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("inbox: handlers still running at shutdown; their deliveries run again after a restart: %w", ctx.Err())
	}
	if started != nil {
		started.Stop()
	}
	in.shutdown()
	return err
}

// shutdown closes the connection and the embedded server.
func (in *Inbox) shutdown() {
	if in.js != nil {
		select {
		case <-in.js.PublishAsyncComplete():
		case <-time.After(2 * time.Second):
		}
	}
	for _, r := range []recstore.Records{in.status, in.seen} {
		if r != nil {
			r.Close()
		}
	}
	if in.nc != nil {
		in.nc.Close()
	}
	if in.ns != nil {
		in.ns.Shutdown()
	}
	if in.unlock != nil {
		in.unlock()
	}
}

// isClosed reports whether Close was called.
func (in *Inbox) isClosed() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed
}

// landed finds out, after a publish that failed, whether the store took the
// delivery (its answer lost: a timeout, a connection cut) by publishing it
// once more with its message id: within JetStream's duplicate window the
// store answers duplicate with the sequence it holds it at, or stores it
// now. It returns the acknowledgement when the store holds the delivery with
// id, nil when it does not (or cannot tell).
func (in *Inbox) landed(msg *nats.Msg, id string) *jetstream.PubAck {
	if in.store.down() {
		return nil // nobody to ask; stored, it runs once and is a duplicate when sent again
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := in.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil
	}
	if ack.Duplicate {
		m, err := in.inbox.GetMsg(ctx, ack.Sequence)
		if err != nil || m.Header.Get(stored.HeaderDelivery) != id || m.Header.Get(stored.HeaderKey) != "" {
			return nil
		}
		in.log.Warn("inbox: the store's answer to a delivery was lost, but it holds the delivery: acknowledged", "delivery", id, "seq", ack.Sequence)
		return &jetstream.PubAck{Stream: ack.Stream, Sequence: ack.Sequence}
	}
	in.log.Warn("inbox: a delivery stored on a last attempt after the store did not answer in time", "delivery", id, "seq", ack.Sequence)
	return ack
}
