// Package metrics counts the deliveries a webhooks.Middleware answers and
// serves the counts in the Prometheus text exposition format (version 0.0.4),
// with the standard library alone.
//
// Feed a Metrics from the middleware's result hook and serve it where the
// scraper looks, usually on an address of its own:
//
//	m := metrics.New(metrics.Options{})
//	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: m.Observe})
//	http.Handle("GET /metrics", m)
//
// Two families are exported, both labelled by event and HTTP status:
// forgehooks_deliveries_total, a counter, and
// forgehooks_delivery_duration_seconds, a histogram of the time from a
// request's start until its answer or, when handlers ran, until they returned.
// The labels' values are bounded,
// so that no sender can make the series grow without end: a request whose
// signature did not verify is counted under the event EventUnverified whatever
// its header said, and a verified event name that is not of the forge's form
// (lower-case letters, digits and underscores), or that comes after
// Options.MaxEvents others, under EventOther.
//
// With a durable inbox, every delivery is answered 202 once stored: feed
// ObserveAttempt from the inbox's Watch and give SetInbox its Stats for the
// families of what became of them (attempts by outcome, retries, dead
// letters, handler durations, backlog and the age of its oldest delivery);
// package receiver does both.
//
// Applications that use a metrics library already feed it from OnResult
// instead; the module's examples/otel shows OpenTelemetry.
package metrics

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/webhooks"
)

// Label values that stand for several events.
const (
	// EventUnverified labels every request whose signature was not verified
	// (rejected before or by the signature check): its event header is not
	// trusted.
	EventUnverified = "(unverified)"
	// EventOther labels verified deliveries whose event name is not of the
	// forge's form, or is new after Options.MaxEvents names were seen.
	EventOther = "(other)"
	// StatusOther labels an answer whose status is not a valid HTTP status.
	StatusOther = "other"
)

// DefaultMaxEvents is the default of Options.MaxEvents: well above the forge's
// number of events.
const DefaultMaxEvents = 256

// DefaultNamespace starts every metric name unless Options.Namespace is set.
const DefaultNamespace = "forgehooks"

// DefaultBuckets returns the default upper bounds of the latency histogram, in
// seconds: from half a millisecond, for handlers that only enqueue work, to
// 30 s, past the forge's 10 s wait (a 202's handlers are timed until they
// return).
func DefaultBuckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
}

// Options configures New. The zero value gives the defaults.
type Options struct {
	// Namespace starts every metric name, followed by "_". Default
	// DefaultNamespace. It must be a valid Prometheus metric name.
	Namespace string
	// Buckets are the histogram's upper bounds in seconds, finite and strictly
	// increasing; +Inf is implied. Nil: DefaultBuckets().
	Buckets []float64
	// MaxEvents bounds the distinct event label values besides
	// EventUnverified and EventOther. Zero: DefaultMaxEvents. Negative: no
	// bound (then every event name a verified delivery carries becomes a
	// series: only for a receiver that trusts its senders' names).
	MaxEvents int
	// MaxTenants bounds the distinct tenant label values (webhooks.Tenants):
	// a delivery of a tenant past the bound is counted under TenantOther.
	// The label is a tenant's name as its SecretSource gave it, never a
	// value a request claimed, and is absent without tenants. Zero:
	// DefaultMaxTenants. Negative: no bound.
	MaxTenants int
}

// DefaultMaxTenants is Options.MaxTenants' default.
const DefaultMaxTenants = 100

// TenantOther is the tenant label of the tenants past Options.MaxTenants.
const TenantOther = "other"

// Metrics counts deliveries for Prometheus. Its zero value is not usable: call
// New. It is safe for concurrent use.
type Metrics struct {
	deliveries, duration string // family names
	bounds               []float64
	les                  []string // bounds as le label values, "+Inf" last
	maxEvents            int
	maxTenants           int

	ns string // the namespace

	mu     sync.RWMutex
	series map[key]*series
	events map[string]bool // the event labels admitted, the fixed ones aside
	tenant map[string]bool // the tenant labels admitted

	inbox inboxMetrics
}

type key struct {
	event  string
	status int    // 0: StatusOther
	tenant string // "": no tenant label
	// ignored: a delivery no filter accepted (webhooks.Result.Ignored),
	// labelled ignored="true".
	ignored bool
}

// series is one event and status: how many observations fell in each bucket
// (not cumulative; the last past every bound), and their sum.
type series struct {
	counts []atomic.Uint64
	sum    atomic.Uint64 // math.Float64bits of the seconds: a sum of nanoseconds could overflow
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// New returns a Metrics with no deliveries counted. It panics when
// opts.Namespace is not a valid metric name or opts.Buckets are not finite
// and strictly increasing, as such a mistake is the program's.
func New(opts Options) *Metrics {
	ns := cmp.Or(opts.Namespace, DefaultNamespace)
	if !metricName.MatchString(ns) {
		panic(fmt.Sprintf("metrics: Options.Namespace %q is not a valid Prometheus metric name", ns))
	}
	bounds := slices.Clone(opts.Buckets)
	if bounds == nil {
		bounds = DefaultBuckets()
	}
	les := make([]string, 0, len(bounds)+1)
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && b <= bounds[i-1] {
			panic(fmt.Sprintf("metrics: Options.Buckets %v are not finite and strictly increasing", opts.Buckets))
		}
		les = append(les, formatFloat(b))
	}
	les = append(les, "+Inf")
	m := &Metrics{
		ns:         ns,
		deliveries: ns + "_deliveries_total",
		duration:   ns + "_delivery_duration_seconds",
		bounds:     bounds,
		les:        les,
		maxEvents:  opts.MaxEvents,
		series:     map[key]*series{},
		events:     map[string]bool{},
		tenant:     map[string]bool{},
	}
	m.maxEvents = bound.Value(m.maxEvents, DefaultMaxEvents, math.MaxInt)
	m.maxTenants = bound.Value(opts.MaxTenants, DefaultMaxTenants, math.MaxInt)
	return m
}

// Observe counts one request's result. Its signature is that of
// webhooks.MiddlewareOptions.OnResult, to which it is meant to be given.
func (m *Metrics) Observe(r webhooks.Result) {
	k := key{event: EventLabel(r), status: r.Status, tenant: r.Tenant, ignored: r.Ignored}
	if k.status < 100 || k.status > 599 {
		k.status = 0
	}
	m.mu.RLock()
	s := m.series[k]
	m.mu.RUnlock()
	if s == nil {
		s = m.add(k)
	}
	s.observe(m.bounds, max(r.Duration, 0))
}

// observe counts one duration d.
func (s *series) observe(bounds []float64, d time.Duration) {
	i, _ := slices.BinarySearch(bounds, d.Seconds())
	s.counts[i].Add(1)
	for {
		old := s.sum.Load()
		if s.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d.Seconds())) {
			return
		}
	}
}

// admitTenantLocked returns tenant as a label: itself when admitted (now,
// or before), TenantOther past Options.MaxTenants. m.mu is held.
func (m *Metrics) admitTenantLocked(tenant string) string {
	if tenant == "" || tenant == TenantOther || m.tenant[tenant] {
		return tenant
	}
	if len(m.tenant) >= m.maxTenants {
		return TenantOther
	}
	m.tenant[tenant] = true
	return tenant
}

// tenantLabel is admitTenantLocked for a caller that does not hold m.mu.
func (m *Metrics) tenantLabel(tenant string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.admitTenantLocked(tenant)
}

// add returns the series of k, made if need be, after admitting k's event or
// replacing it with EventOther.
func (m *Metrics) add(k key) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k.event != EventUnverified && k.event != EventOther && !m.events[k.event] {
		if len(m.events) >= m.maxEvents {
			k.event = EventOther
		} else {
			m.events[k.event] = true
		}
	}
	k.tenant = m.admitTenantLocked(k.tenant)
	s := m.series[k]
	if s == nil {
		s = &series{counts: make([]atomic.Uint64, len(m.bounds)+1)}
		m.series[k] = s
	}
	return s
}

// EventLabel returns the event label of r as Observe gives it, before the
// bound of Options.MaxEvents: EventUnverified when r's signature was not
// verified, EventOther when its event name is not of the forge's form
// (1 to 64 lower-case letters, digits and underscores), and the name
// otherwise. Adapters to other metrics libraries use it to bound their labels
// the same way.
func EventLabel(r webhooks.Result) string {
	if !r.Verified {
		return EventUnverified
	}
	event := r.Name
	if len(event) == 0 || len(event) > 64 {
		return EventOther
	}
	for i := 0; i < len(event); i++ {
		c := event[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return EventOther
		}
	}
	return event
}

// ContentType is the media type of the exposition that WriteTo writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteTo writes every family in the Prometheus text exposition format,
// series sorted by event and status. A family with no delivery counted yet
// has its HELP and TYPE lines only.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	type snap struct {
		key
		counts []uint64
		total  uint64
		sum    float64
	}
	m.mu.RLock()
	snaps := make([]snap, 0, len(m.series))
	for k, s := range m.series {
		sn := snap{key: k, counts: make([]uint64, len(s.counts)), sum: math.Float64frombits(s.sum.Load())}
		for i := range s.counts {
			sn.counts[i] = s.counts[i].Load()
			sn.total += sn.counts[i]
		}
		snaps = append(snaps, sn)
	}
	m.mu.RUnlock()
	slices.SortFunc(snaps, func(a, b snap) int {
		return cmp.Or(cmp.Compare(a.event, b.event), cmp.Compare(a.status, b.status), cmp.Compare(a.tenant, b.tenant), cmpBool(a.ignored, b.ignored))
	})

	var b bytes.Buffer
	fmt.Fprintf(&b, "# HELP %s Requests to the webhook path, by event and HTTP status answered. The event of a request whose signature was not verified is %s.\n", m.deliveries, EventUnverified)
	fmt.Fprintf(&b, "# TYPE %s counter\n", m.deliveries)
	for _, s := range snaps {
		fmt.Fprintf(&b, "%s{%s} %d\n", m.deliveries, labels(s.key), s.total)
	}
	fmt.Fprintf(&b, "# HELP %s Time from a request's start until its answer, or until its handlers returned when they ran, by event and HTTP status answered.\n", m.duration)
	fmt.Fprintf(&b, "# TYPE %s histogram\n", m.duration)
	for _, s := range snaps {
		l := labels(s.key)
		var cum uint64
		for i, le := range m.les {
			cum += s.counts[i]
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %d\n", m.duration, l, le, cum)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %s\n", m.duration, l, formatFloat(s.sum))
		fmt.Fprintf(&b, "%s_count{%s} %d\n", m.duration, l, s.total)
	}
	m.writeInbox(&b, time.Now())
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// ServeHTTP answers a GET or HEAD with the exposition of WriteTo, and other
// methods with 405.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var b bytes.Buffer
	m.WriteTo(&b)
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method == http.MethodGet {
		w.Write(b.Bytes())
	}
}

// labels writes the event and status labels of k.
func labels(k key) string {
	status := StatusOther
	if k.status != 0 {
		status = strconv.Itoa(k.status)
	}
	l := `event="` + escape(k.event) + `",status="` + status + `"`
	if k.tenant != "" {
		l += `,tenant="` + escape(k.tenant) + `"`
	}
	if k.ignored {
		l += `,ignored="true"`
	}
	return l
}

// escape escapes a label value as the format requires. The values Observe
// admits need none; it keeps the output valid should that change.
func escape(v string) string {
	var b []byte
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
