package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/webhooks"
)

// Metric namespaces of the two roles of a fleet; a receiver that does both
// keeps metrics.DefaultNamespace.
const (
	IngestNamespace = "forgehooks_ingest"
	WorkerNamespace = "forgehooks_worker"
)

// WorkerOptions configures RunWorker. Inbox, and Receiver or Forward, are
// required.
type WorkerOptions struct {
	// Inbox is the inbox the deliveries are stored in: the same NATS cluster
	// (URLs) and Name as the receivers that take them in (IngestOnly), or
	// the directory of an embedded inbox no other process holds. Its
	// Receiver and Logger are set by RunWorker; Workers, RetryDelays,
	// AckWait and OrderBy are the workers' own.
	Inbox inbox.Options
	// Receiver runs each delivery's handlers; a *webhooks.Webhooks is one
	// (its secret is not used: the deliveries were verified when stored).
	Receiver inbox.Receiver
	// Forward, when set, is an http(s) URL every delivery is re-POSTed to
	// (see inbox.Forward), besides Receiver's handlers.
	Forward string
	// ForwardClient posts to Forward. Nil: a client with a
	// DefaultForwardTimeout timeout.
	ForwardClient *http.Client
	// Metrics, when set, with MetricsAddr, serves the inbox's metrics
	// (attempts, retries, dead letters, backlog, durations) at /metrics,
	// named "forgehooks_worker_…" unless Metrics.Namespace says otherwise.
	Metrics     *metrics.Options
	MetricsAddr string
	// OnListen, when set, is told the metrics' address once it listens.
	OnListen func(part, addr string)
	// Logger gets one line per handled delivery and the workers' lines.
	// Nil: slog.Default().
	Logger *slog.Logger
	// DrainTimeout bounds the drain once ctx is done: running handlers
	// finish until then; the deliveries not finished are left to the other
	// workers (or the next start). Zero: DefaultDrainTimeout. Negative: no
	// bound.
	DrainTimeout time.Duration
}

// RunWorker runs the workers of an inbox that receivers elsewhere fill,
// with no HTTP endpoint for deliveries: retries, dead letters and order per
// key as a receiver's own workers, any number of processes at once. It
// returns when ctx is done, after draining: no new delivery is fetched, the
// running ones finish until DrainTimeout, and those left are leased to no
// one, so that the other workers (or the next) take them.
func RunWorker(ctx context.Context, o WorkerOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.Receiver == nil && o.Forward == "" {
		return &OptionError{"Receiver", errors.New("required unless Forward is set: nothing would run the deliveries")}
	}
	if o.Forward != "" {
		if err := CheckURL(o.Forward); err != nil {
			return &OptionError{"Forward", err}
		}
	}
	if o.MetricsAddr != "" {
		if err := CheckListenAddr(o.MetricsAddr); err != nil {
			return &OptionError{"MetricsAddr", err}
		}
	}
	rcv := o.Receiver
	var em *emitter.Emitter
	if o.Forward != "" {
		client := o.ForwardClient
		if client == nil {
			client = &http.Client{Timeout: DefaultForwardTimeout}
		}
		em = emitter.New(emitter.Options{Logger: log})
		em.OnAny(inbox.Forward(o.Forward, client))
		if r := o.Receiver; r != nil {
			em.OnAny(func(ctx context.Context, _ emitter.Event) error {
				d, _ := webhooks.DeliveryFrom(ctx)
				return r.ReceiveDelivery(ctx, d)
			})
		}
		rcv = emitterReceiver{em}
		log.Info("forgehooks: forwarding each delivery", "forward", o.Forward)
	}
	iopts := o.Inbox
	iopts.Receiver = rcv
	if iopts.Logger == nil {
		iopts.Logger = log
	}
	in, err := inbox.Open(ctx, iopts)
	if err != nil {
		return err
	}
	var stops []func()
	stops = append(stops, in.Watch(func(rec delivery.Record) { attemptLine(log, rec) }))
	var srv *http.Server
	if o.Metrics != nil && o.MetricsAddr != "" {
		mo := *o.Metrics
		if mo.Namespace == "" {
			mo.Namespace = WorkerNamespace
		}
		m := metrics.New(mo)
		stops = append(stops, in.Watch(m.ObserveAttempt))
		m.SetInbox(inboxStats(in))
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return errors.Join(fmt.Errorf("receiver: metrics: cannot listen on %s: %w", o.MetricsAddr, err), in.Close(context.Background()))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", m)
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		go srv.Serve(ln)
		log.Info("forgehooks: serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
		if o.OnListen != nil {
			o.OnListen("metrics", ln.Addr().String())
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	err = in.Start(sctx)
	cancel()
	if err == nil {
		log.Info("forgehooks: running the inbox's deliveries", "workers", in.Workers(), "replicas", in.Replicas())
		<-ctx.Done()
	}
	dctx, dcancel := context.Background(), context.CancelFunc(func() {})
	if timeout := bound.Value(o.DrainTimeout, DefaultDrainTimeout, -1); timeout > 0 {
		dctx, dcancel = context.WithTimeout(dctx, timeout)
	}
	defer dcancel()
	if err == nil {
		log.Info("forgehooks: shutting down; letting running handlers finish")
	}
	errs := []error{err, in.Close(dctx)}
	// After the drain: the attempts that end during it are logged and
	// counted too.
	for _, stop := range stops {
		stop()
	}
	if em != nil {
		errs = append(errs, em.Close(dctx))
	}
	if srv != nil {
		errs = append(errs, srv.Shutdown(dctx))
	}
	return errors.Join(errs...)
}

// inboxStats is the metrics' view of in.
func inboxStats(in *inbox.Inbox) func(context.Context) (metrics.InboxStats, error) {
	return func(ctx context.Context) (metrics.InboxStats, error) {
		s, err := in.Stats(ctx)
		c := in.Counters()
		return metrics.InboxStats{Waiting: s.Waiting, Dead: s.Dead, OldestWaiting: s.OldestWaiting,
			Duplicates: c.Duplicates, Replays: c.Replays, IDReuses: c.IDReuses, Requeued: c.Requeued,
			Unsealed: c.Unsealed, BadSeals: c.BadSeals, NotDeliveries: c.NotDeliveries}, err
	}
}

// emitterReceiver runs an emitter's handlers as an inbox's Receiver, with
// the delivery in their context (webhooks.DeliveryFrom), as Forward reads
// it.
type emitterReceiver struct{ em *emitter.Emitter }

func (r emitterReceiver) ReceiveDelivery(ctx context.Context, d webhooks.Delivery) error {
	return r.em.Receive(webhooks.ContextWithDelivery(ctx, d), emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload})
}
