package app

import (
	"cmp"
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/internal/bound"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// DefaultAPIURL is the forge's public REST API.
const DefaultAPIURL = "https://api.github.com"

// Defaults of Options.
const (
	// DefaultMaxWait covers the forge's usual one-minute secondary limit with
	// room to spare; an exhausted hourly limit fails fast instead, so that an
	// inbox retries the delivery later rather than hold a worker for an hour.
	DefaultMaxWait = 90 * time.Second
	// DefaultMaxRetries bounds the retries of one request.
	DefaultMaxRetries = 4
	// DefaultRefreshBefore is how long before its expiry an installation
	// token is replaced (the forge's tokens last an hour).
	DefaultRefreshBefore = 5 * time.Minute
)

// Options configure an App. AppID and exactly one of Key, PrivateKey,
// PrivateKeyFile and PrivateKeyEnv are required; every other field is
// optional.
type Options struct {
	// AppID is the app's id (or its client id): the iss of its JWTs.
	AppID string
	// PrivateKey is the app's private key, PEM (PKCS#1 or PKCS#8).
	PrivateKey []byte
	// PrivateKeyFile names a file holding the PEM private key.
	PrivateKeyFile string
	// PrivateKeyEnv names an environment variable holding the PEM private
	// key; literal "\n" sequences in a one-line value count as newlines.
	PrivateKeyEnv string
	// Key is the private key, parsed already (see ParsePrivateKey).
	Key *rsa.PrivateKey

	// APIURL is the REST API's base URL; default DefaultAPIURL. A
	// self-hosted forge's is like "https://forge.example/api/v3".
	// Credentials are sent to this scheme and host only.
	APIURL string
	// Transport sends the requests; default http.DefaultTransport.
	Transport http.RoundTripper
	// UserAgent is set on requests that have none (the forge requires one);
	// default "forgehooks-app".
	UserAgent string
	// Logger is told about waits for rate limits and token requests, never
	// a secret. Nil: slog.Default().
	Logger *slog.Logger
	// Clock is the time source; default the real clock.
	Clock Clock
	// MaxWait bounds the total time one request waits for its
	// installation's rate limit and for backoff; a request that would wait
	// longer fails at once with a *RateLimitError. Zero: DefaultMaxWait.
	// Negative: no bound (wait as long as the forge says).
	MaxWait time.Duration
	// MaxRetries bounds the retries of one request (after a rate limit, or
	// a 5xx or network error of an idempotent request). Zero:
	// DefaultMaxRetries. Negative: no retry (a count of tries, not a bound:
	// MaxWait bounds the time they take).
	MaxRetries int
	// RefreshBefore is how long before expiry a token is replaced; default
	// DefaultRefreshBefore.
	RefreshBefore time.Duration
	// Tenants finds the tenant a delivery names (webhooks.Delivery.Tenant)
	// for Client: its Installation, Token and APIURL. It is asked by name,
	// as webhooks.TenantKey{Path: name} (as VerifyAndReceive does). Pass the
	// receiver's *webhooks.Tenants (Webhooks.Tenants()) to share its cache,
	// or the SecretSource given to webhooks.NewTenants. Nil: Client uses the
	// delivery's installation only.
	Tenants webhooks.SecretSource
}

// App is a forge app's credentials: its JWT, its installations' tokens, and
// HTTP clients and transports that use them. It is safe for concurrent use;
// make one per app and share it.
type App struct {
	id         string
	jwt        jwtCache
	api        *url.URL
	base       http.RoundTripper
	userAgent  string
	log        *slog.Logger
	clock      Clock
	maxWait    time.Duration
	maxRetries int
	refresh    time.Duration
	tenants    webhooks.SecretSource

	mu      sync.Mutex
	tokens  map[tokenKey]*tokenEntry
	budgets map[budgetKey]*budget
	sites   map[string]*App // the same app at other API roots (Tenant.APIURL)
}

// New returns the App the options describe, or an error that says what is
// missing or wrong (never quoting the key).
func New(o Options) (*App, error) {
	if o.AppID == "" {
		return nil, errors.New("app: no app id (Options.AppID)")
	}
	key, err := loadKey(&o)
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", o.AppID, err)
	}
	api, err := url.Parse(strings.TrimSuffix(cmp.Or(o.APIURL, DefaultAPIURL), "/"))
	if err != nil || (api.Scheme != "http" && api.Scheme != "https") || api.Host == "" {
		return nil, fmt.Errorf("app %s: API URL %q: want http(s)://host[/path]", o.AppID, o.APIURL)
	}
	a := &App{
		id:         o.AppID,
		jwt:        jwtCache{appID: o.AppID, key: key},
		api:        api,
		base:       cmp.Or[http.RoundTripper](o.Transport, http.DefaultTransport),
		userAgent:  cmp.Or(o.UserAgent, "forgehooks-app"),
		log:        cmp.Or(o.Logger, slog.Default()),
		clock:      cmp.Or[Clock](o.Clock, realClock{}),
		maxWait:    bound.Value(o.MaxWait, DefaultMaxWait, math.MaxInt64),
		maxRetries: max(cmp.Or(o.MaxRetries, DefaultMaxRetries), 0),
		refresh:    cmp.Or(o.RefreshBefore, DefaultRefreshBefore),
		tenants:    o.Tenants,
		tokens:     map[tokenKey]*tokenEntry{},
		budgets:    map[budgetKey]*budget{},
	}
	return a, nil
}

// at returns the app at the API root apiURL ("": a itself): the same app
// and key, with tokens and rate limits of its own, for a tenant's
// self-hosted forge.
func (a *App) at(apiURL string) (*App, error) {
	if apiURL == "" {
		return a, nil
	}
	api, err := url.Parse(strings.TrimSuffix(apiURL, "/"))
	if err != nil || (api.Scheme != "http" && api.Scheme != "https") || api.Host == "" || api.User != nil {
		return nil, errors.New("app: a tenant's API URL is not http(s)://host[/path]")
	}
	if api.String() == a.api.String() {
		return a, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sites[api.String()]; s != nil {
		return s, nil
	}
	s := &App{
		id: a.id, jwt: jwtCache{appID: a.jwt.appID, key: a.jwt.key}, api: api, base: a.base, userAgent: a.userAgent,
		log: a.log, clock: a.clock, maxWait: a.maxWait, maxRetries: a.maxRetries, refresh: a.refresh,
		tokens: map[tokenKey]*tokenEntry{}, budgets: map[budgetKey]*budget{},
	}
	if a.sites == nil {
		a.sites = map[string]*App{}
	}
	a.sites[api.String()] = s
	return s, nil
}

// ID returns the app's id, as given.
func (a *App) ID() string { return a.id }

// String names the app, never its key.
func (a *App) String() string { return "app " + a.id + " (key redacted)" }

// LogValue names the app, never its key.
func (a *App) LogValue() slog.Value { return slog.StringValue(a.String()) }

// JWT returns the app's JWT for a request made at now (iat 60 s before now,
// valid 10 minutes), reused until two minutes before it expires.
func (a *App) JWT(now time.Time) (Token, error) {
	t, err := a.jwt.get(now)
	if err != nil {
		return Token{}, fmt.Errorf("app %s: %w", a.id, err)
	}
	return t, nil
}

// Transport returns a RoundTripper that sends requests as the app (with its
// JWT), for the /app endpoints. See InstallationTransport for what it does
// beyond adding the credentials.
func (a *App) Transport() http.RoundTripper { return &transport{a: a} }

// InstallationTransport returns a RoundTripper that sends requests as
// installation id, with a token narrowed to scope (nil: everything the
// installation may do). It adds the credentials only to requests for the
// API's scheme and host, and sends others (a redirect to a download host)
// as they are. Requests of one installation share a budget: after the forge
// refuses one for a secondary limit (403 or 429 with Retry-After, or saying
// so), every request of that installation waits until the forge's time; after
// its primary limit runs out (X-RateLimit-Remaining: 0), the requests of that
// resource only (X-RateLimit-Resource: core, search, code_search, graphql)
// wait until X-RateLimit-Reset. No wait the forge asks for is taken longer
// than MaxServerWait. A request whose total wait would exceed
// Options.MaxWait fails at once with a *RateLimitError. A refused request is
// retried, and so is a GET, HEAD, PUT, DELETE or OPTIONS request that got a
// 5xx or a network error, with backoff, at most Options.MaxRetries times; a
// request with a body is retried only when it can be replayed (GetBody, as
// http.NewRequest sets for in-memory bodies), else its answer is returned.
// A 401 for a cached token drops the token and retries once with a new one.
// A refusal that no retry cures (403 "Resource not accessible by
// integration", an installation the forge says does not exist) is returned
// as a *RefusedError, not as an answer: it is final (webhooks.Permanent), so
// a handler that returns it sends its delivery to the dead letters without
// a retry.
func (a *App) InstallationTransport(id int64, scope *Scope) http.RoundTripper {
	return &transport{a: a, installation: id, scope: scope.normalize()}
}

// InstallationClient returns an *http.Client that sends requests as
// installation id (InstallationTransport with no narrowing).
func (a *App) InstallationClient(id int64) *http.Client {
	return &http.Client{Transport: a.InstallationTransport(id, nil)}
}

// ErrNoInstallation is wrapped by Client's error when the delivery in the
// context names no installation.
var ErrNoInstallation = errors.New("the delivery names no installation")

// ErrNoDelivery is wrapped by Client's error when the context carries no
// delivery.
var ErrNoDelivery = errors.New("the context carries no delivery")

// ErrNoCredentials is wrapped by Client's error when nothing says how to act
// for the delivery: it names no installation, and it has no tenant with an
// Installation or a Token. Trying again cannot help: the configuration must
// change.
var ErrNoCredentials = errors.New("no installation or token is configured for the delivery")

// permanent marks err as one that trying again cannot cure (ErrNoCredentials):
// final (webhooks.Permanent), so that an inbox moves the delivery to the dead
// letters after that attempt instead of retrying it for hours.
func permanent(err error) error { return webhooks.Permanent(err) }

// Client returns an *http.Client that acts for the delivery whose handler
// ctx was given to, with the first of these that applies:
//
//  1. the installation that sent the delivery: the id in its body's
//     top-level "installation" member, found without decoding the body;
//  2. the Installation of the delivery's tenant (Delivery.Tenant, looked up
//     in Options.Tenants), for a hook whose deliveries name none (a
//     repository's or organization's own hook);
//  3. the tenant's Token, sent as "Authorization: token …".
//
// When the tenant has an APIURL, every request (and an installation's token
// request) goes to that API root instead of Options.APIURL: a self-hosted
// forge per tenant. Which one it used is logged at debug level. The error
// wraps ErrNoDelivery for a context that did not come from webhooks'
// dispatch (Receive, the Middleware, an inbox); the tenant source's error
// when it fails (webhooks.ErrUnknownTenant for a tenant gone from it); and
// ErrNoCredentials with ErrNoInstallation, naming the event and saying what
// to configure, when none applies.
func (a *App) Client(ctx context.Context) (*http.Client, error) {
	d, ok := webhooks.DeliveryFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("app: %w (use the context a handler was given)", ErrNoDelivery)
	}
	id, found := installationOf(d.Payload)
	var tn webhooks.Tenant
	if d.Tenant != "" && a.tenants != nil {
		var err error
		if tn, err = a.tenants.Lookup(ctx, webhooks.TenantKey{Path: d.Tenant}); err != nil {
			return nil, fmt.Errorf("app: delivery %q: tenant %q: %w", clip(d.ID), clip(d.Tenant), err)
		}
	}
	site, err := a.at(tn.APIURL)
	if err != nil {
		return nil, fmt.Errorf("%w (tenant %q)", err, clip(d.Tenant))
	}
	var c *http.Client
	used := ""
	switch {
	case found:
		c, used = site.InstallationClient(id), "the delivery's installation"
	case tn.Installation > 0:
		id = tn.Installation
		c, used = site.InstallationClient(id), "the tenant's installation"
	case tn.Token != "":
		c, used = &http.Client{Transport: &transport{a: site, static: newToken(tn.Token), tenant: tn.Name}}, "the tenant's token"
	default:
		return nil, permanent(noCredentials(d, a.tenants != nil))
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "app: client for the delivery", slog.String("uses", used), slog.Int64("installation", id),
		slog.String("tenant", d.Tenant), slog.String("api", site.api.String()), slog.String("delivery", clip(d.ID)))
	return c, nil
}

// noCredentials is Client's error when nothing says how to act for d.
func noCredentials(d webhooks.Delivery, tenants bool) error {
	var fix string
	switch {
	case d.Tenant == "":
		fix = "it was not sent to an app (a repository or organization webhook?): receive it as a tenant's (webhooks.Options.Tenants, serve --tenants) with an installation or a token"
	case !tenants:
		fix = fmt.Sprintf("its tenant %q cannot be read: set app.Options.Tenants to the tenants' source", clip(d.Tenant))
	default:
		fix = fmt.Sprintf("set an installation or a token for tenant %q (installation: or token: in the tenants file; webhooks.Tenant.Installation or Token)", clip(d.Tenant))
	}
	return fmt.Errorf("app: event %q (delivery %q): %w, and %w: %s", clip(eventName(d)), clip(d.ID), ErrNoInstallation, ErrNoCredentials, fix)
}

// installationPath is where a delivery names its installation's id.
var installationPath = []jsonscan.Path{{"installation", "id"}}

// InstallationID returns the id of the installation that sent the delivery
// whose handler ctx was given to, with Client's errors.
func InstallationID(ctx context.Context) (int64, error) {
	d, ok := webhooks.DeliveryFrom(ctx)
	if !ok {
		return 0, fmt.Errorf("app: %w (use the context a handler was given)", ErrNoDelivery)
	}
	if id, ok := installationOf(d.Payload); ok {
		return id, nil
	}
	return 0, fmt.Errorf("app: event %q (delivery %q): %w: it was not sent to an app (a repository or organization webhook?)", clip(eventName(d)), clip(d.ID), ErrNoInstallation)
}

// installationOf finds the installation id a delivery's body names.
func installationOf(payload []byte) (int64, bool) {
	// The same scan payloads.InstallationID makes, without compiling the
	// generated payload types into programs that use raw handlers only.
	var res [1]jsonscan.Result
	if jsonscan.Lookup(payload, installationPath, res[:]) == nil {
		if id, ok := res[0].Int64(payload); ok {
			return id, true
		}
	}
	return 0, false
}

// eventName is d's event and action, as "issues.opened".
func eventName(d webhooks.Delivery) string {
	name := d.Name
	if scan, err := jsonscan.Scan(d.Payload); err == nil {
		if act := scan.String(d.Payload); act != "" {
			name += "." + act
		}
	}
	return name
}

// budgetKey names a rate-limit budget: an installation's (0: the app's, or
// with tenant set that tenant's token's) for one resource ("core",
// "search"...), or for all of them ("": a secondary limit or a Retry-After
// pauses every request of the installation).
type budgetKey struct {
	installation int64
	tenant       string
	resource     string
}

// budget returns the rate-limit budget of installation id (0: the app; with
// tenant set, that tenant's token) for resource ("": the whole
// installation's).
func (a *App) budget(id int64, tenant, resource string) *budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := budgetKey{id, tenant, resource}
	b := a.budgets[k]
	if b == nil {
		b = &budget{}
		a.budgets[k] = b
	}
	return b
}

// clip bounds a value from a delivery that goes into an error.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
