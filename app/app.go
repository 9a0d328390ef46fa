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

	mu      sync.Mutex
	tokens  map[tokenKey]*tokenEntry
	budgets map[budgetKey]*budget
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
		tokens:     map[tokenKey]*tokenEntry{},
		budgets:    map[budgetKey]*budget{},
	}
	return a, nil
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

// Client returns an *http.Client that sends requests as the installation
// that sent the delivery whose handler ctx was given to. It finds the
// installation's id in the delivery's body (its top-level "installation"
// member's "id") without decoding it. The error wraps ErrNoDelivery for a
// context that did not come from webhooks' dispatch (Receive, the
// Middleware, an inbox), and ErrNoInstallation, naming the event, for a
// delivery without an installation (a repository's or organization's own
// webhook, a ping).
func (a *App) Client(ctx context.Context) (*http.Client, error) {
	id, err := InstallationID(ctx)
	if err != nil {
		return nil, err
	}
	return a.InstallationClient(id), nil
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
	// The same scan payloads.InstallationID makes, without compiling the
	// generated payload types into programs that use raw handlers only.
	var res [1]jsonscan.Result
	if jsonscan.Lookup(d.Payload, installationPath, res[:]) == nil {
		if id, ok := res[0].Int64(d.Payload); ok {
			return id, nil
		}
	}
	name := d.Name
	if scan, err := jsonscan.Scan(d.Payload); err == nil {
		if act := scan.String(d.Payload); act != "" {
			name += "." + act
		}
	}
	return 0, fmt.Errorf("app: event %q (delivery %q): %w: it was not sent to an app (a repository or organization webhook?)", clip(name), clip(d.ID), ErrNoInstallation)
}

// budgetKey names a rate-limit budget: an installation's (0: the app's) for
// one resource ("core", "search"...), or for all of them ("": a secondary
// limit or a Retry-After pauses every request of the installation).
type budgetKey struct {
	installation int64
	resource     string
}

// budget returns the rate-limit budget of installation id (0: the app) for
// resource ("": the whole installation's).
func (a *App) budget(id int64, resource string) *budget {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := budgetKey{id, resource}
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
