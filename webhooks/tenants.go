package webhooks

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Headers the forge sends that name the hook a delivery is for. They are not
// signed: Tenants uses them only to choose the secrets a delivery must verify
// with.
const (
	// HeaderHookID carries the id of the hook (X-Forge-Hook-ID).
	HeaderHookID = "X-Forge-Hook-ID"
	// HeaderTargetType carries what the hook is installed on: "repository",
	// "organization", "integration"...
	HeaderTargetType = "X-Forge-Hook-Installation-Target-Type"
	// HeaderTargetID carries the id of that repository, organization or app.
	HeaderTargetID = "X-Forge-Hook-Installation-Target-ID"
	// HeaderTenant is the header a forwarded delivery carries its tenant in
	// (inbox.Forward): the name the SecretSource gave, never a value the
	// sender wrote.
	HeaderTenant = "X-Forge-Tenant"
)

// Defaults of TenantsOptions.
const (
	// DefaultTenantPathValue is the path wildcard that names a tenant, as in
	// "/t/{tenant}/hooks".
	DefaultTenantPathValue = "tenant"
	// DefaultTenantCacheSize is how many resolved keys are kept, known and
	// unknown each.
	DefaultTenantCacheSize = 10000
	// DefaultTenantCacheTTL is how long a resolved key is kept.
	DefaultTenantCacheTTL = time.Minute
	// DefaultTenantLookupTimeout is how long a SecretSource may take before
	// the delivery is answered 503.
	DefaultTenantLookupTimeout = 2 * time.Second
	// DefaultTenantMaxLookups is how many SecretSource calls may be under
	// way at once, for keys no delivery has verified (and as many again for
	// those one has).
	DefaultTenantMaxLookups = 64
	// DefaultTenantLookupRate is how many SecretSource calls per second keys
	// no delivery has verified may cause, after a burst of MaxLookups.
	DefaultTenantLookupRate = 50
	// MaxTenantKeyLen is the longest value of a TenantKey field: longer ones
	// are no tenant's (404) and never reach the SecretSource.
	MaxTenantKeyLen = 128
)

// ErrUnknownTenant is what a SecretSource returns, or wraps, for a key that
// names no tenant: the delivery is answered 404 as a request for an unknown
// path is. Any other error is answered 503.
var ErrUnknownTenant = errors.New("webhooks: unknown tenant")

// errLookupsBusy is Resolve's error when MaxLookups calls are under way.
var errLookupsBusy = errors.New("webhooks: too many SecretSource lookups under way (TenantsOptions.MaxLookups)")

// errLookupRate is Resolve's error when keys no delivery verified with have
// used up LookupRate.
var errLookupRate = errors.New("webhooks: SecretSource lookups for keys no delivery has verified with are over TenantsOptions.LookupRate")

// TenantKey is what arrives before verification that can name a tenant: the
// path value, the hook id and the installation target headers, as sent (none
// of them is trusted; they only choose which secrets a delivery must verify
// with). Empty fields were not sent. It is comparable, and the cache's key.
type TenantKey struct {
	// Path is the request's path value named by TenantsOptions.PathValue
	// ("/t/{tenant}/hooks").
	Path string
	// HookID is the HeaderHookID header.
	HookID string
	// TargetType and TargetID are the HeaderTargetType and HeaderTargetID
	// headers.
	TargetType, TargetID string
}

// Tenant is one tenant: its name, its secrets, and how a handler acts for
// it (package app reads Installation, Token and APIURL; this package only
// carries them).
type Tenant struct {
	// Name is how the tenant is known everywhere after verification:
	// Delivery.Tenant, the inbox, logs, metrics, forwarded requests.
	// Required: at most MaxTenantKeyLen bytes of printable ASCII.
	Name string
	// Secrets are tried in order; the first is the current one, the others
	// are accepted while it is rotated. At least one; none empty.
	Secrets []string
	// Installation is the app installation that acts for the tenant when
	// a delivery names none (a repository's or organization's own hook).
	// Zero: none; never negative.
	Installation int64
	// Token is a credential for the tenant's API (a personal or bot
	// token), used when no installation applies. Empty: none. It is a
	// secret: nothing in this module prints it.
	Token string
	// APIURL is the tenant's REST API root, such as
	// "https://forge.example.com/api/v3" for a self-hosted forge; it applies
	// to the installation and the token alike. Empty: the app's.
	APIURL string
}

// SecretSource finds the tenant and secrets of a key. It is called for keys
// not in Tenants' cache, at most once at a time per key, with a context that
// ends after TenantsOptions.LookupTimeout. It returns an error that is or
// wraps ErrUnknownTenant for a key that names no tenant (404), any other
// error when it cannot tell (503, and the key is asked again next time).
type SecretSource interface {
	Lookup(ctx context.Context, key TenantKey) (Tenant, error)
}

// SecretSourceFunc is a func that is a SecretSource.
type SecretSourceFunc func(ctx context.Context, key TenantKey) (Tenant, error)

// Lookup calls f.
func (f SecretSourceFunc) Lookup(ctx context.Context, key TenantKey) (Tenant, error) {
	return f(ctx, key)
}

// TenantsOptions configures NewTenants. The zero value gives the defaults.
type TenantsOptions struct {
	// PathValue names the path wildcard read into TenantKey.Path with
	// http.Request.PathValue. Default DefaultTenantPathValue. A Middleware
	// whose Path holds "{name}" sets it itself; under a router, the router
	// does.
	PathValue string
	// CacheSize bounds the keys kept, known ones and unknown ones each (the
	// least recently used goes first), so that a flood of made-up keys
	// neither grows memory nor evicts the known tenants. Zero:
	// DefaultTenantCacheSize. Negative: nothing is cached.
	CacheSize int
	// CacheTTL is how long a key's answer is kept: a secret changed at the
	// source is used after at most this long. Zero: DefaultTenantCacheTTL.
	CacheTTL time.Duration
	// LookupTimeout bounds each call of the SecretSource; past it the
	// delivery is answered 503. Zero: DefaultTenantLookupTimeout.
	LookupTimeout time.Duration
	// MaxLookups bounds the SecretSource calls under way at once, those
	// past LookupTimeout that have not returned included: a request whose
	// key needs a call past it is answered 503, so that a source that hangs
	// (and ignores its context) holds at most this many goroutines whatever
	// the keys requests make up. Keys a delivery has verified with have as
	// many places again of their own, so that made-up keys cannot take
	// theirs. Zero: DefaultTenantMaxLookups.
	MaxLookups int
	// LookupRate bounds the SecretSource calls per second for keys no
	// delivery has verified with, after a burst of MaxLookups: past it such
	// a key is answered 503 without a call. Zero: DefaultTenantLookupRate.
	// Negative: no bound.
	LookupRate float64
	// NotFound, when set, answers the requests whose key names no tenant:
	// under a router (Middleware.AnyPath), its own answer to an unknown path,
	// such as http.NotFoundHandler() under http.ServeMux, so that an unknown
	// tenant looks like any path that is not served. Nil: the Middleware's
	// answer to a path other than its own.
	NotFound http.Handler
}

// Tenants resolves each delivery's tenant and secrets through a
// SecretSource, with a cache. Set it as Options.Tenants: the middleware then
// verifies each delivery with the secrets of its tenant. It is safe for
// concurrent use.
//
// The cache keeps apart the keys a delivery has verified with and those
// none has (made up, or not yet used), each up to CacheSize: keys that
// anyone may make up (a known tenant's path with random hook or target
// headers) evict only one another, call the source at most LookupRate times
// a second, and never take the places of the keys that verified. A verified
// key's answer is asked again in the background once half its CacheTTL has
// passed, so that a tenant that receives deliveries is not looked up in
// their way.
//
// How a request is answered, before its body is read: a key that is too
// long or that the source says names no tenant gets 404 with the body an
// unknown path gets; a source that fails or outlasts LookupTimeout, 503 with
// Retry-After. A known tenant's delivery with a signature made with no secret
// of that tenant gets 400, as any mismatch does. The answer to an unknown key
// does not wait for a body nor hash one: that it is unknown is what the 404
// says, and the time it takes says nothing more (the lookup of an unknown key
// and of a known one take the same path through the cache and the source).
type Tenants struct {
	src      SecretSource
	value    string
	notFound http.Handler
	ttl      time.Duration
	timeout  time.Duration

	mu       sync.Mutex
	trusted  lru[TenantKey, *tenantKeys] // keys a delivery verified with
	known    lru[TenantKey, *tenantKeys] // resolved, not verified yet
	unknown  lru[TenantKey, struct{}]
	inflight map[TenantKey]*lookupCall
	calls    [2]int // source calls that have not returned: untrusted, trusted
	maxCalls int
	rate     float64   // untrusted calls per second; <= 0: no bound
	tokens   float64   // untrusted calls allowed now
	refilled time.Time // when tokens was last topped up
}

// tenantKeys is a resolved tenant: what the source said, its keyring, and
// the key and time it was resolved for.
type tenantKeys struct {
	tenant  Tenant
	name    string
	keys    *keyring
	key     TenantKey
	fetched time.Time
	// verified is set once a delivery verified with keys.
	verified atomic.Bool
}

// lookupCall is a SecretSource call under way, shared by the requests for
// its key.
type lookupCall struct {
	done    chan struct{}
	trusted bool // for a key a delivery verified with
	t       *tenantKeys
	err     error
}

// NewTenants returns Tenants over src. It panics when src is nil.
func NewTenants(src SecretSource, opts TenantsOptions) *Tenants {
	if src == nil {
		panic("webhooks: NewTenants with a nil SecretSource")
	}
	t := &Tenants{src: src, value: opts.PathValue, notFound: opts.NotFound, ttl: opts.CacheTTL, timeout: opts.LookupTimeout, inflight: map[TenantKey]*lookupCall{}}
	if t.value == "" {
		t.value = DefaultTenantPathValue
	}
	if t.ttl <= 0 {
		t.ttl = DefaultTenantCacheTTL
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTenantLookupTimeout
	}
	t.maxCalls = opts.MaxLookups
	if t.maxCalls <= 0 {
		t.maxCalls = DefaultTenantMaxLookups
	}
	t.rate = opts.LookupRate
	if t.rate == 0 {
		t.rate = DefaultTenantLookupRate
	}
	t.tokens = float64(t.maxCalls)
	size := opts.CacheSize
	if size == 0 {
		size = DefaultTenantCacheSize
	}
	if size < 0 {
		size = 0
	}
	t.trusted.max, t.known.max, t.unknown.max = size, size, size
	return t
}

// KeyOf returns the TenantKey of r: its path value and headers. ok is false
// when a field is longer than MaxTenantKeyLen, is not printable ASCII, or
// (for a header) is sent more than once; such a request names no tenant.
func (t *Tenants) KeyOf(r *http.Request) (key TenantKey, ok bool) {
	key.Path = r.PathValue(t.value)
	var okH, okT, okI bool
	key.HookID, okH = oneHeader(r.Header, HeaderHookID)
	key.TargetType, okT = oneHeader(r.Header, HeaderTargetType)
	key.TargetID, okI = oneHeader(r.Header, HeaderTargetID)
	return key, okH && okT && okI && ValidTenantName(key.Path)
}

// oneHeader returns the value of header name, "" when it is absent; ok is
// false when it is repeated or not a valid key field.
func oneHeader(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", true
	case 1:
		return vs[0], ValidTenantName(vs[0])
	}
	return "", false
}

// ValidTenantName reports whether s may be a tenant's name or a TenantKey
// field: at most MaxTenantKeyLen bytes of printable ASCII without spaces or
// slashes (the empty string is valid: a field not sent).
func ValidTenantName(s string) bool {
	if len(s) > MaxTenantKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c > 0x7e || c == '/' {
			return false
		}
	}
	return true
}

// Resolve returns the tenant of key, from the cache or the source. The
// error is or wraps ErrUnknownTenant when key names no tenant.
func (t *Tenants) Resolve(ctx context.Context, key TenantKey) (Tenant, error) {
	tk, err := t.resolve(ctx, key)
	if err != nil {
		return Tenant{}, err
	}
	tn := tk.tenant
	tn.Secrets = append([]string(nil), tn.Secrets...)
	return tn, nil
}

// Tenants returns Options.Tenants (nil without), so that code given only the
// Webhooks (a receiver's setup) reads the tenants through the same cache:
// package app's Options.Tenants.
func (w *Webhooks) Tenants() *Tenants { return w.tenants }

// Lookup is Resolve for a key a delivery has verified with, such as the
// name of a verified delivery's tenant (TenantKey{Path: Delivery.Tenant}):
// its lookup is not held to LookupRate, and its answer is kept among the
// verified keys'. It makes a Tenants a SecretSource, so that code that reads
// tenants by name (package app's Options.Tenants) shares its cache. A nil
// *Tenants knows no tenant.
func (t *Tenants) Lookup(ctx context.Context, key TenantKey) (Tenant, error) {
	if t == nil {
		return Tenant{}, ErrUnknownTenant
	}
	tk, err := t.resolveAs(ctx, key, true)
	if err != nil {
		return Tenant{}, err
	}
	tn := tk.tenant
	tn.Secrets = append([]string(nil), tn.Secrets...)
	return tn, nil
}

// resolve is Resolve, with the tenant's keyring.
func (t *Tenants) resolve(ctx context.Context, key TenantKey) (*tenantKeys, error) {
	return t.resolveAs(ctx, key, false)
}

// resolveAs is resolve; trusted says that key is one a delivery verified
// with, so that a lookup it needs has the places of such keys.
func (t *Tenants) resolveAs(ctx context.Context, key TenantKey, trusted bool) (*tenantKeys, error) {
	now := time.Now()
	t.mu.Lock()
	if tk, exp, ok := t.trusted.peek(key); ok {
		if now.Before(exp) {
			if now.Sub(tk.fetched) >= t.ttl/2 && t.inflight[key] == nil && t.calls[1] < t.maxCalls {
				t.startLookup(key, true)
			}
			t.mu.Unlock()
			return tk, nil
		}
		// Expired: asked again in the way, with the places of trusted keys.
		trusted = true
	} else if tk, ok := t.known.get(key, now); ok {
		t.mu.Unlock()
		return tk, nil
	} else if _, ok := t.unknown.get(key, now); ok {
		t.mu.Unlock()
		return nil, ErrUnknownTenant
	}
	c, ok := t.inflight[key]
	if !ok {
		if err := t.allowLocked(trusted, now); err != nil {
			t.mu.Unlock()
			return nil, err
		}
		c = t.startLookup(key, trusted)
	}
	t.mu.Unlock()
	select {
	case <-c.done:
		return c.t, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// allowLocked returns nil when a source call for a key may start now, and
// takes its share of the rate then; otherwise why not. t.mu is held.
func (t *Tenants) allowLocked(trusted bool, now time.Time) error {
	if t.calls[callSlot(trusted)] >= t.maxCalls {
		return errLookupsBusy
	}
	if trusted || t.rate <= 0 {
		return nil
	}
	if !t.refilled.IsZero() {
		t.tokens = min(float64(t.maxCalls), t.tokens+now.Sub(t.refilled).Seconds()*t.rate)
	}
	t.refilled = now
	if t.tokens < 1 {
		return errLookupRate
	}
	t.tokens--
	return nil
}

// startLookup starts a source call for key and records it in flight.
// t.mu is held.
func (t *Tenants) startLookup(key TenantKey, trusted bool) *lookupCall {
	c := &lookupCall{done: make(chan struct{}), trusted: trusted}
	t.calls[callSlot(trusted)]++
	t.inflight[key] = c
	go t.lookup(key, c)
	return c
}

// callSlot is the index in Tenants.calls: 1 for trusted, 0 otherwise.
func callSlot(trusted bool) int {
	if trusted {
		return 1
	}
	return 0
}

// verified records that a delivery verified with tk's secrets: its key moves
// among the keys made-up ones cannot evict. The middleware calls it.
func (t *Tenants) verified(tk *tenantKeys) {
	if tk == nil || tk.verified.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk.verified.Swap(true) {
		return
	}
	if v, ok := t.known.peekValue(tk.key); ok && v == tk {
		t.known.remove(tk.key)
	}
	if _, _, ok := t.trusted.peek(tk.key); !ok && time.Now().Before(tk.fetched.Add(t.ttl)) {
		t.trusted.put(tk.key, tk, tk.fetched.Add(t.ttl))
	}
}

// lookup calls the source for key, on its own goroutine so that the
// requests waiting for it may give up (their own context) while it ends
// within LookupTimeout; it caches the answer.
func (t *Tenants) lookup(key TenantKey, c *lookupCall) {
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	type answer struct {
		t   Tenant
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("webhooks: the SecretSource panicked: %v", p)}
			}
		}()
		defer func() {
			t.mu.Lock()
			t.calls[callSlot(c.trusted)]--
			t.mu.Unlock()
		}()
		tn, err := t.src.Lookup(ctx, key)
		ch <- answer{tn, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		a.err = fmt.Errorf("webhooks: the SecretSource did not answer within %v: %w", t.timeout, ctx.Err())
	}
	if a.err == nil {
		a.err = checkTenant(a.t)
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.inflight, key)
	switch {
	case a.err == nil:
		keys, _ := newKeyring(a.t.Secrets[0], a.t.Secrets[1:]...) // checked
		tn := a.t
		tn.Secrets = append([]string(nil), tn.Secrets...)
		c.t = &tenantKeys{tenant: tn, name: tn.Name, keys: keys, key: key, fetched: now}
		if c.trusted {
			// The key verified before; what the source says now replaces
			// what it said then, and stays among the verified.
			c.t.verified.Store(true)
			t.trusted.put(key, c.t, now.Add(t.ttl))
		} else {
			t.known.put(key, c.t, now.Add(t.ttl))
		}
	case errors.Is(a.err, ErrUnknownTenant):
		c.err = a.err
		t.trusted.remove(key)
		t.unknown.put(key, struct{}{}, now.Add(t.ttl))
	default:
		// A verified key keeps its answer until it expires: the source
		// failing is no reason to refuse its deliveries sooner.
		c.err = a.err
	}
	close(c.done)
}

// checkTenant checks what a SecretSource returned.
func checkTenant(tn Tenant) error {
	if tn.Name == "" || !ValidTenantName(tn.Name) {
		return fmt.Errorf("webhooks: the SecretSource returned a tenant name that is empty or not %d printable ASCII characters without spaces or slashes", MaxTenantKeyLen)
	}
	if len(tn.Secrets) == 0 {
		return fmt.Errorf("webhooks: the SecretSource returned tenant %q without a secret", tn.Name)
	}
	for i, s := range tn.Secrets {
		if s == "" {
			return fmt.Errorf("webhooks: the SecretSource returned tenant %q with secret %d empty", tn.Name, i+1)
		}
	}
	if tn.Installation < 0 {
		return fmt.Errorf("webhooks: the SecretSource returned tenant %q with a negative installation", tn.Name)
	}
	return nil
}

// Forget drops the cached answers, so that the next delivery of each key asks
// the source again: after secrets were changed there. The keys deliveries
// verified with are remembered as such: their next lookups keep places of
// their own, beyond LookupRate.
func (t *Tenants) Forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trusted.expireAll()
	t.known.clear()
	t.unknown.clear()
}

// lru is a map bounded to max entries, each with an expiry, dropping the
// least recently used. The caller locks it.
type lru[K comparable, V any] struct {
	max   int
	items map[K]*list.Element
	order list.List // front: most recently used
}

type lruEntry[K comparable, V any] struct {
	key     K
	value   V
	expires time.Time
}

func (l *lru[K, V]) get(k K, now time.Time) (v V, ok bool) {
	e, ok := l.items[k]
	if !ok {
		return v, false
	}
	ent := e.Value.(*lruEntry[K, V])
	if !now.Before(ent.expires) {
		l.order.Remove(e)
		delete(l.items, k)
		return v, false
	}
	l.order.MoveToFront(e)
	return ent.value, true
}

func (l *lru[K, V]) put(k K, v V, expires time.Time) {
	if l.max <= 0 {
		return
	}
	if l.items == nil {
		l.items = map[K]*list.Element{}
	}
	if e, ok := l.items[k]; ok {
		ent := e.Value.(*lruEntry[K, V])
		ent.value, ent.expires = v, expires
		l.order.MoveToFront(e)
		return
	}
	for len(l.items) >= l.max {
		last := l.order.Back()
		delete(l.items, last.Value.(*lruEntry[K, V]).key)
		l.order.Remove(last)
	}
	l.items[k] = l.order.PushFront(&lruEntry[K, V]{key: k, value: v, expires: expires})
}

// peek returns k's value and expiry, expired or not, and marks it used.
func (l *lru[K, V]) peek(k K) (v V, expires time.Time, ok bool) {
	e, ok := l.items[k]
	if !ok {
		return v, expires, false
	}
	l.order.MoveToFront(e)
	ent := e.Value.(*lruEntry[K, V])
	return ent.value, ent.expires, true
}

// peekValue returns k's value, expired or not, without marking it used.
func (l *lru[K, V]) peekValue(k K) (v V, ok bool) {
	e, ok := l.items[k]
	if !ok {
		return v, false
	}
	return e.Value.(*lruEntry[K, V]).value, true
}

func (l *lru[K, V]) remove(k K) {
	if e, ok := l.items[k]; ok {
		l.order.Remove(e)
		delete(l.items, k)
	}
}

// expireAll marks every entry expired, keeping it.
func (l *lru[K, V]) expireAll() {
	for _, e := range l.items {
		e.Value.(*lruEntry[K, V]).expires = time.Time{}
	}
}

func (l *lru[K, V]) len() int { return len(l.items) }

func (l *lru[K, V]) clear() {
	l.items = nil
	l.order.Init()
}

// StaticTenant is one tenant of a StaticTenants: its secrets, the hook ids
// that select it when the path names none, and how a handler acts for it
// (Tenant's fields of the same names).
type StaticTenant struct {
	// Secrets are the tenant's Tenant.Secrets.
	Secrets []string
	// Hooks are the hook ids (HeaderHookID) that name the tenant.
	Hooks []string
	// Installation is the tenant's Tenant.Installation.
	Installation int64
	// Token is the tenant's Tenant.Token.
	Token string
	// APIURL is the tenant's Tenant.APIURL.
	APIURL string
}

// tenant is st as the Tenant called name.
func (st StaticTenant) tenant(name string) Tenant {
	return Tenant{Name: name, Secrets: st.Secrets, Installation: st.Installation, Token: st.Token, APIURL: st.APIURL}
}

// StaticTenants is a SecretSource over a fixed set of tenants, by name. A
// key's Path names the tenant; without one, its HookID selects the tenant
// that lists it in Hooks. A key with both must agree: a path whose tenant
// lists hooks, with a hook id not among them, names no tenant.
type StaticTenants map[string]StaticTenant

// Lookup finds key's tenant; ErrUnknownTenant when there is none.
func (s StaticTenants) Lookup(_ context.Context, key TenantKey) (Tenant, error) {
	if key.Path != "" {
		tn, ok := s[key.Path]
		if !ok || key.HookID != "" && len(tn.Hooks) > 0 && !contains(tn.Hooks, key.HookID) {
			return Tenant{}, ErrUnknownTenant
		}
		return tn.tenant(key.Path), nil
	}
	if key.HookID != "" {
		for name, tn := range s {
			if contains(tn.Hooks, key.HookID) {
				return tn.tenant(name), nil
			}
		}
	}
	return Tenant{}, ErrUnknownTenant
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
