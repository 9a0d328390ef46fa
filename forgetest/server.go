// Package forgetest runs a fake of the forge's REST API for hook delivery logs
// and for an app's installations, built from the forge's published REST
// description (an extract is embedded; testdata/SOURCE.md names the version),
// for tests of catch-up and of handlers that answer through the API.
//
// The fake checks every request against the description (path, method, path
// and query parameters, the form of the Authorization header: an RS256 app JWT
// for the app hook, a token for repository and organization hooks, and a
// User-Agent), records what departs from it as a violation, and answers with
// JSON it validates against the description's schemas. It pages delivery logs
// with a cursor in the Link header, enforces the primary rate limit
// (X-RateLimit-* headers) and the secondary limit on redelivery requests
// (403 with Retry-After), and can be told to fail requests (429, 5xx, …).
// A redelivery really POSTs the stored delivery, signed, to a receiver URL.
// With no Options, it expects the built-in app (DefaultAppID, its key from
// PrivateKeyPEM); BasePath serves the API under a self-hosted forge's path.
//
// For an app's handlers it issues installation access tokens (POST
// /app/installations/{installation_id}/access_tokens, as the app) that expire
// after Options.TokenLifetime, and answers GET /app (as the app) from
// Options.App. It accepts those tokens, and Options.Token, for every
// operation a bot commonly calls (testdata/operations.txt lists them:
// issues, comments, labels, assignees, reactions, pulls, reviews and review
// comments, check runs and suites, statuses, contents, git refs, commits,
// trees and blobs), each answered with the success the description lists and
// a value of its schema that echoes what the request sent (labels added are
// labels of those names). Issue comments are recorded (Comments), and every
// request, with its operation, credentials and body (Requests). Each
// installation is limited on its own: a primary limit with X-RateLimit-*
// headers, and a secondary limit (Throttle, or too many content-creating
// requests a minute) answered 403 with Retry-After. Request bodies are
// checked against the description too.
package forgetest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/signing"
)

// Options configure a fake forge. Every field is optional.
type Options struct {
	// AppID is the iss an app JWT must carry; default DefaultAppID.
	AppID string
	// PublicKey verifies app JWTs; default the public key of the built-in
	// key (PrivateKeyPEM).
	PublicKey *rsa.PublicKey
	// BasePath is the path the API is served under, as a self-hosted
	// forge's is ("/api/v3"); default none. URL ends with it.
	BasePath string
	// Token is a token the fake accepts besides the installation tokens it
	// issues: for repository and organization hooks' delivery logs, and for
	// the operations a bot calls (as a tenant's own token would be).
	Token string
	// Secret signs deliveries (X-Hub-Signature-256).
	Secret string
	// Receiver is the URL deliveries are POSTed to; "" means nobody listens.
	Receiver string
	// Now is the fake's clock; default time.Now. Pass a *Clock's Now to share
	// virtual time with the code under test.
	Now func() time.Time
	// SecondaryLimit is how many content-creating requests a minute
	// (redeliveries; an installation's comments, counted per installation)
	// are accepted before 403 with Retry-After; default 80, negative for no
	// limit.
	SecondaryLimit int
	// SecondaryRetryAfter is the Retry-After of a secondary limit, and how
	// long an installation that hit it is refused; default one minute.
	SecondaryRetryAfter time.Duration
	// InstallationRateLimit is each installation's primary limit, requests
	// an hour; default 5000.
	InstallationRateLimit int
	// TokenLifetime is how long an installation token is valid; default one
	// hour, as the forge's.
	TokenLifetime time.Duration
	// RateLimit is the primary limit, requests an hour; default 5000.
	RateLimit int
	// App is what GET /app answers the app: the events it is subscribed to
	// and its permissions (none when zero).
	App AppInfo
	// AllowViolations keeps the test passing when requests depart from the
	// description (for tests that send such requests on purpose).
	AllowViolations bool
}

// Attempt is one entry of a fake delivery log (hook-delivery-item).
type Attempt struct {
	ID          int64
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	Duration    float64
	Status      string
	StatusCode  int
	Event       string
	Action      string // "" is sent as null
}

// Request is one request the fake served.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	At     time.Time // by the fake's clock
	Status int
	// Operation is the operationId of the description's operation the
	// request was for ("issues/add-labels"); "" when it matched none.
	Operation string
	// Installation is the installation whose token authorized the request;
	// 0 for any other credentials or none.
	Installation int64
	// Authorization is the Authorization header as sent, so that a test can
	// tell which credentials a bot used.
	Authorization string
	// Body is the request's body, when it was JSON the operation takes
	// (nil for a request without one, or one refused as off the
	// description).
	Body []byte
}

// Fault makes the fake answer matching requests with Status, Header and Body
// instead of serving them, Times times (0: once).
type Fault struct {
	Method string // "" matches any
	Suffix string // the path ends with it; "" matches any
	Status int
	Header http.Header
	Body   string
	Times  int
}

type delivery struct {
	event   string
	payload []byte
}

type hookLog struct {
	attempts   []Attempt // in order of creation
	deliveries map[string]delivery
}

// Server is a running fake forge.
type Server struct {
	// URL is the API's base URL (http://127.0.0.1:port, followed by
	// Options.BasePath).
	URL string

	desc *Description
	opts Options
	now  func() time.Time
	srv  *httptest.Server
	send *http.Client

	mu         sync.Mutex
	hooks      map[string]*hookLog
	nextID     int64
	receiver   string
	faults     []*Fault
	intercept  func(http.ResponseWriter, *http.Request) bool
	requests   []Request
	violations []string
	posts      []time.Time // accepted redelivery requests, for the secondary limit
	used       int         // requests in the current primary window
	window     time.Time   // start of the primary window
	throttled  int

	installations map[int64]*installation
	issued        []IssuedToken
	comments      []Comment
}

// New starts a fake forge on 127.0.0.1 until the test ends, and then fails
// the test if any request departed from the description (unless
// AllowViolations). The app hook exists; add others with AddHook.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Start starts a fake forge on 127.0.0.1; Close stops it.
func Start(o Options) (*Server, error) {
	desc, err := ParseDescription()
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AppID == "" {
		o.AppID = DefaultAppID
	}
	if o.PublicKey == nil {
		o.PublicKey = &PrivateKey().PublicKey
	}
	if o.BasePath != "" {
		o.BasePath = "/" + strings.Trim(o.BasePath, "/")
	}
	if o.SecondaryLimit == 0 {
		o.SecondaryLimit = 80
	}
	if o.RateLimit == 0 {
		o.RateLimit = 5000
	}
	if o.SecondaryRetryAfter <= 0 {
		o.SecondaryRetryAfter = time.Minute
	}
	if o.InstallationRateLimit == 0 {
		o.InstallationRateLimit = 5000
	}
	if o.TokenLifetime <= 0 {
		o.TokenLifetime = time.Hour
	}
	s := &Server{
		desc: desc, opts: o, now: o.Now,
		hooks:         map[string]*hookLog{AppHook: newHookLog()},
		nextID:        1000,
		receiver:      o.Receiver,
		send:          &http.Client{Timeout: 10 * time.Second},
		installations: map[int64]*installation{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + o.BasePath
	return s, nil
}

// AppID returns the app id app JWTs must carry (Options.AppID, or
// DefaultAppID).
func (s *Server) AppID() string { return s.opts.AppID }

// Close stops the server. It returns an error listing the requests that
// departed from the description, unless AllowViolations.
func (s *Server) Close() error {
	s.srv.Close()
	if v := s.Violations(); len(v) > 0 && !s.opts.AllowViolations {
		return fmt.Errorf("forgetest: %d requests departed from the REST description:\n%s", len(v), strings.Join(v, "\n"))
	}
	return nil
}

func newHookLog() *hookLog { return &hookLog{deliveries: map[string]delivery{}} }

// AppHook is the app hook's key, as AddHook, Send and Attempts take it.
const AppHook = "app"

// RepoHook returns the key of hook id of repository owner/repo.
func RepoHook(owner, repo string, id int64) string {
	return fmt.Sprintf("repos/%s/%s/hooks/%d", owner, repo, id)
}

// OrgHook returns the key of hook id of organization org.
func OrgHook(org string, id int64) string { return fmt.Sprintf("orgs/%s/hooks/%d", org, id) }

// AddHook creates an empty hook log under key; requests for hooks never added
// are answered 404.
func (s *Server) AddHook(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooks[key] == nil {
		s.hooks[key] = newHookLog()
	}
}

// SetReceiver changes where deliveries go; "" means nobody listens.
func (s *Server) SetReceiver(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receiver = url
}

// Send makes a delivery of event with payload on hook key, as the forge does
// when the event happens: it POSTs it to the receiver and logs the attempt,
// failed when nobody answers 2xx. It returns the attempt.
func (s *Server) Send(key, event string, payload []byte) Attempt {
	guid := newGUID()
	a := s.deliver(guid, event, payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hook(key)
	h.deliveries[guid] = delivery{event: event, payload: bytes.Clone(payload)}
	s.nextID++
	a.ID = s.nextID
	h.attempts = append(h.attempts, a)
	return a
}

// Record adds an attempt to hook key's log as given (an ID of 0 gets a fresh
// one; an empty GUID a fresh guid), with the payload a redelivery sends. It
// returns the attempt as logged.
func (s *Server) Record(key string, a Attempt, payload []byte) Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hook(key)
	if a.ID == 0 {
		s.nextID++
		a.ID = s.nextID
	}
	if a.GUID == "" {
		a.GUID = newGUID()
	}
	if a.DeliveredAt.IsZero() {
		a.DeliveredAt = s.now()
	}
	a.DeliveredAt = a.DeliveredAt.UTC().Truncate(time.Second)
	if _, ok := h.deliveries[a.GUID]; !ok || payload != nil {
		h.deliveries[a.GUID] = delivery{event: a.Event, payload: bytes.Clone(payload)}
	}
	h.attempts = append(h.attempts, a)
	return a
}

func (s *Server) hook(key string) *hookLog {
	h := s.hooks[key]
	if h == nil {
		panic(fmt.Sprintf("forgetest: no hook %q: call AddHook first", key))
	}
	return h
}

// Attempts returns hook key's log, oldest first.
func (s *Server) Attempts(key string) []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hook(key).attempts)
}

// Requests returns every request served, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Violations returns the requests that departed from the description.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// Throttled counts the requests answered with a rate-limit error by the
// fake's own limits (not by faults).
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttled
}

// Fail makes the fake answer the next matching requests as f says.
func (s *Server) Fail(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times <= 0 {
		f.Times = 1
	}
	s.faults = append(s.faults, &f)
}

// Intercept installs a function that may answer a request itself (returning
// true) after the request was checked and authorized: to serve malformed
// pages, looping links and the like. Its answers are not validated.
func (s *Server) Intercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intercept = f
}

func newGUID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// deliver POSTs a delivery to the receiver as the forge does and returns the
// attempt's outcome (without ID).
func (s *Server) deliver(guid, event string, payload []byte) Attempt {
	s.mu.Lock()
	receiver := s.receiver
	s.mu.Unlock()
	a := Attempt{GUID: guid, Event: event, DeliveredAt: s.now().UTC().Truncate(time.Second), Action: actionOf(payload)}
	if receiver == "" {
		a.Status = "failed to connect to host"
		return a
	}
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, receiver, bytes.NewReader(payload))
	if err != nil {
		a.Status = "invalid URL"
		return a
	}
	sig, err := signing.Sign(s.opts.Secret, payload)
	if err != nil {
		a.Status = "cannot sign: " + err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "forge-hookshot/fake")
	req.Header.Set("X-Forge-Event", event)
	req.Header.Set("X-Forge-Delivery", guid)
	req.Header.Set("X-Hub-Signature-256", sig)
	res, err := s.send.Do(req)
	a.Duration = time.Since(start).Seconds()
	if err != nil {
		a.Status = "failed to connect to host"
		return a
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	a.StatusCode = res.StatusCode
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		a.Status = "OK"
	} else {
		a.Status = "Invalid HTTP Response: " + strconv.Itoa(res.StatusCode)
	}
	return a
}

func actionOf(payload []byte) string {
	var p struct {
		Action string `json:"action"`
	}
	json.Unmarshal(payload, &p)
	return p.Action
}

// item is the hook-delivery-item JSON of an attempt.
func (a Attempt) item() map[string]any {
	m := map[string]any{
		"id": a.ID, "guid": a.GUID, "delivered_at": a.DeliveredAt.UTC().Format(time.RFC3339),
		"redelivery": a.Redelivery, "duration": a.Duration, "status": a.Status,
		"status_code": a.StatusCode, "event": a.Event, "action": nil,
		"installation_id": nil, "repository_id": nil, "throttled_at": nil,
	}
	if a.Action != "" {
		m["action"] = a.Action
	}
	return m
}
