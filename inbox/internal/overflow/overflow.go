// Package overflow keeps a tenant's backlog off the subject that every
// tenant's unordered deliveries share, so that the runners can share their
// workers fairly however deep the backlog.
//
// The workers' consumer hands out the shared subject (<Name>.in.q) in stored
// order: behind a tenant's thousands, another tenant's delivery would wait
// for all of them. So the intake (Router) stores the next deliveries of a
// tenant (the deliveries without a tenant form one group) on the tenant's
// own subject, <Name>.in.t.<TenantDigest>.q, once Threshold of its
// deliveries stored on the shared subject by this process are still waiting
// there (stored after the last one the workers' consumer handed out), and
// goes on doing so while that subject's consumer has deliveries not yet
// ended. Each such subject has a durable consumer of its own (ConsumerName),
// which the intake creates before its first publish there; the runners find
// the consumers by listing them and fetch from each and from the workers'
// consumer in turn (package runner). Nothing is written twice or moved: the
// choice is made once, at the publish.
package overflow

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"forgehooks.dev/forgehooks/inbox/internal/stored"
)

// Threshold is how many of a tenant's deliveries, stored by one process on
// the shared subject and not yet handed out by the workers' consumer, send
// its next ones to its own subject. Small, since another tenant's delivery
// stored after them waits for them; not one, since a tenant's own subject
// costs a consumer.
const Threshold = 8

const (
	// handedOutEvery is how stale the Router's reading of the workers'
	// consumer may be when a tenant reaches Threshold.
	handedOutEvery = 250 * time.Millisecond
	// drainedEvery is how often the Router asks whether a tenant's own
	// subject has run dry, to store its deliveries on the shared one again.
	drainedEvery = time.Second
	// ensureEvery is how long the Router trusts that a tenant's consumer
	// exists before it makes sure again (the runners delete an idle one).
	ensureEvery = 30 * time.Second
	// callTimeout bounds each request the Router makes: on a store that
	// does not answer it names the shared subject, whose publish then
	// waits as any other.
	callTimeout = 2 * time.Second
)

// ConsumerPrefix starts the names of the overflow consumers of the inbox
// named name; the tenant's digest ends them.
func ConsumerPrefix(name string) string { return name + "_T_" }

// ConsumerName is the consumer of the overflow subject of the tenant with
// digest (stored.TenantDigest).
func ConsumerName(name, digest string) string { return ConsumerPrefix(name) + digest }

// DigestOf returns the tenant digest a consumer's name ends in, false when
// it names no overflow consumer of the inbox named name.
func DigestOf(name, consumer string) (string, bool) {
	d, ok := strings.CutPrefix(consumer, ConsumerPrefix(name))
	if !ok || len(d) != 16 || strings.Trim(d, "0123456789abcdef") != "" {
		return "", false
	}
	return d, true
}

// Subject is the overflow subject of the tenant with digest.
func Subject(name, digest string) string {
	return name + ".in." + stored.OverflowToken + "." + digest + "." + stored.StoreToken
}

// SubjectsFilter matches every overflow subject of the inbox named name.
func SubjectsFilter(name string) string {
	return name + ".in." + stored.OverflowToken + ".*." + stored.StoreToken
}

// ConsumerConfig is the overflow consumer of the tenant with digest: like
// the workers' consumer (explicit acks, attempts counted by the runner, no
// bound on pending) but on the tenant's subject alone.
func ConsumerConfig(name, digest string, ackWait time.Duration, replicas int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       ConsumerName(name, digest),
		Description:   "forgehooks: runs the handlers of the deliveries a tenant stored while it had a backlog",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: Subject(name, digest),
		Replicas:      replicas,
	}
}

// Ensure creates the consumer cfg unless it exists (with this config or
// another: a process with another AckWait made it).
func Ensure(ctx context.Context, s jetstream.Stream, cfg jetstream.ConsumerConfig) error {
	_, err := s.CreateConsumer(ctx, cfg)
	if err == nil || errors.Is(err, jetstream.ErrConsumerExists) {
		return nil
	}
	return err
}

// Router chooses the subject of each unordered delivery an intake stores:
// see the package documentation. Its zero value is not usable: set the
// fields before the first call. Its methods are safe for concurrent use.
type Router struct {
	// Name is the inbox's Name.
	Name string
	// Workers names the workers' consumer.
	Workers string
	// AckWait is that of the consumers it creates (their replicas are the
	// stream's).
	AckWait time.Duration
	// Logger receives a line when a consumer cannot be created.
	Logger *slog.Logger

	mu        sync.Mutex
	tenants   map[string]*tenant
	handedOut uint64    // the workers' consumer's last stream sequence handed out
	readAt    time.Time // when handedOut was read
	reading   bool
}

// tenant is what the Router knows of one tenant's deliveries.
type tenant struct {
	name     string
	waiting  []uint64 // stored here on the shared subject, maybe not handed out yet
	storing  int      // named the shared subject, not yet Stored
	own      bool     // its deliveries go to its own subject
	checked  time.Time
	ensured  time.Time
	ensuring chan struct{} // closed when the call making sure of its consumer is answered
	subject  string
	consumer jetstream.ConsumerConfig
}

// Subject returns the subject the next unordered delivery of tenant is
// stored on, in stream s: the shared one, or the tenant's own once it has a
// backlog. It creates the tenant's consumer before it first names the
// tenant's subject; when that fails it names the shared one.
func (r *Router) Subject(ctx context.Context, s jetstream.Stream, tenantName string) string {
	shared := r.shared()
	now := time.Now()
	// Most calls ask the server nothing: the calls that do share one
	// deadline, and only they pay for a context with it.
	deadline := now.Add(callTimeout)
	bounded := func() (context.Context, context.CancelFunc) { return context.WithDeadline(ctx, deadline) }
	r.mu.Lock()
	t := r.tenantLocked(tenantName)
	if !t.own {
		if r.prune(t) < Threshold {
			r.storingShared(t)
			r.mu.Unlock()
			return shared
		}
		if now.Sub(r.readAt) > handedOutEvery && !r.reading {
			r.reading = true
			r.mu.Unlock()
			c, cancel := bounded()
			n, err := r.readHandedOut(c, s)
			cancel()
			r.mu.Lock()
			r.reading = false
			if err == nil {
				r.handedOut, r.readAt = max(r.handedOut, n), time.Now()
				for _, x := range r.tenants {
					if x != t {
						r.prune(x) // forgets the tenants with none waiting
					}
				}
			}
			if r.prune(t) < Threshold {
				r.storingShared(t)
				r.mu.Unlock()
				return shared
			}
		}
		t.own, t.checked = true, now
		if t.subject == "" {
			d := stored.TenantDigest(tenantName)
			t.subject = Subject(r.Name, d)
			t.consumer = ConsumerConfig(r.Name, d, r.AckWait, s.CachedInfo().Config.Replicas)
		}
	}
	check := now.Sub(t.checked) > drainedEvery
	ensure := now.Sub(t.ensured) > ensureEvery
	if ensure && t.ensuring != nil {
		// One call makes sure of it; the others go on, or wait for it
		// when it was never made (its subject would have no consumer).
		ensure = false
		if t.ensured.IsZero() {
			wait := t.ensuring
			r.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
			}
			r.mu.Lock()
			if t.ensured.IsZero() {
				r.storingShared(t)
				r.mu.Unlock()
				return shared
			}
		}
	}
	if ensure {
		t.ensuring = make(chan struct{})
	}
	if check {
		t.checked = now
	}
	subject, cfg := t.subject, t.consumer
	r.mu.Unlock()
	if check {
		c, cancel := bounded()
		drained := r.drained(c, s, cfg.Durable)
		cancel()
		if drained {
			r.mu.Lock()
			t.own = false
			r.storingShared(t)
			r.mu.Unlock()
			return shared
		}
	}
	if ensure {
		c, cancel := bounded()
		err := Ensure(c, s, cfg)
		cancel()
		r.mu.Lock()
		close(t.ensuring)
		t.ensuring = nil
		if err != nil {
			r.storingShared(t)
			r.mu.Unlock()
			r.logger().Warn("inbox: creating a tenant's overflow consumer; its delivery goes on the shared subject", "consumer", cfg.Durable, "error", err)
			return shared
		}
		t.ensured = now
		r.mu.Unlock()
	}
	return subject
}

// Stored ends the publish of a delivery of tenant on the subject Subject
// named: stored at seq, or 0 when the store took none (an error, a
// duplicate). Every Subject is followed by one Stored, since the deliveries
// on their way to the shared subject count towards Threshold: concurrent
// intakes must not all pass it at once.
func (r *Router) Stored(tenantName, subject string, seq uint64) {
	if subject != r.shared() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tenantLocked(tenantName)
	t.storing = max(t.storing-1, 0)
	if seq != 0 {
		t.waiting = append(t.waiting, seq)
	} else {
		r.prune(t) // forgets it when nothing remains
	}
}

// storingShared counts a publish of t on its way to the shared subject
// (prune may have just forgotten t). r.mu is held.
func (r *Router) storingShared(t *tenant) {
	t.storing++
	r.tenants[t.name] = t
}

// shared is the subject every tenant's deliveries are stored on until it
// has a backlog.
func (r *Router) shared() string { return r.Name + ".in." + stored.StoreToken }

// tenantLocked returns the state of tenantName, made on first use. r.mu is
// held.
func (r *Router) tenantLocked(tenantName string) *tenant {
	if r.tenants == nil {
		r.tenants = map[string]*tenant{}
	}
	t := r.tenants[tenantName]
	if t == nil {
		t = &tenant{name: tenantName}
		r.tenants[tenantName] = t
	}
	return t
}

// prune drops the sequences of t handed out, and t itself when nothing
// remains of it; it returns how many still wait or are being stored. r.mu
// is held.
func (r *Router) prune(t *tenant) int {
	w := t.waiting[:0]
	for _, seq := range t.waiting {
		if seq > r.handedOut {
			w = append(w, seq)
		}
	}
	clear(t.waiting[len(w):])
	t.waiting = w
	if len(w) == 0 && t.storing == 0 && !t.own {
		delete(r.tenants, t.name)
	}
	return len(w) + t.storing
}

// readHandedOut reads the last stream sequence the workers' consumer
// handed out (0 when it does not exist yet: none was).
func (r *Router) readHandedOut(ctx context.Context, s jetstream.Stream) (uint64, error) {
	c, err := s.Consumer(ctx, r.Workers)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return c.CachedInfo().Delivered.Stream, nil
}

// drained reports whether the consumer named name has no delivery left to
// hand out or waiting to be acknowledged (or is gone).
func (r *Router) drained(ctx context.Context, s jetstream.Stream, name string) bool {
	c, err := s.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	info := c.CachedInfo()
	return info.NumPending == 0 && info.NumAckPending == 0
}

func (r *Router) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}
