// Package webhookstest helps users test their own webhook handlers: it makes
// signed requests that carry every header the forge sends, delivers them to an
// http.Handler and records the answer, and gives the example payloads of every
// event and action the repository's corpus holds.
//
// It is for tests, as net/http/httptest is: its functions report a misuse
// through the testing.TB they are given, and it depends on the standard
// library alone.
package webhookstest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"forgehooks.dev/forgehooks/internal/uuid"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// Headers the forge sends with every delivery besides those package webhooks
// checks (webhooks.HeaderEvent, HeaderDelivery and HeaderSignature).
const (
	// HeaderHookID carries the id of the webhook that sent the delivery.
	HeaderHookID = "X-Forge-Hook-ID"
	// HeaderTargetID carries the id of the resource the webhook belongs to.
	HeaderTargetID = "X-Forge-Hook-Installation-Target-ID"
	// HeaderTargetType carries that resource's type: "repository",
	// "organization" or "integration" (an app's webhook).
	HeaderTargetType = "X-Forge-Hook-Installation-Target-Type"
	// HeaderSignatureSHA1 carries the legacy HMAC-SHA1 signature, "sha1=" and
	// 40 hex digits, which the forge still sends beside the SHA-256 one.
	// Package webhooks never accepts it.
	HeaderSignatureSHA1 = "X-Hub-Signature"
)

// UserAgent is the User-Agent of NewRequest's requests: the form of the
// forge's, "Forge-Hookshot/" and a short hex build id.
const UserAgent = "Forge-Hookshot/7e57ed0"

// HookID is the X-Forge-Hook-ID of NewRequest's requests unless WithHeader
// changes it; it is also the target id of a payload that names neither a
// repository nor an organization.
const HookID = "424242"

// Option changes a request that NewRequest makes.
type Option func(*request)

type request struct {
	target string
	header http.Header
}

// WithPath sends the request to target instead of webhooks.DefaultPath: a path,
// with a query if wanted ("/hooks/forge?tenant=a"), or an absolute URL
// ("https://example.com/hooks"), as httptest.NewRequest takes it.
func WithPath(target string) Option {
	return func(r *request) { r.target = target }
}

// WithDeliveryID sets the X-Forge-Delivery header to id instead of a fresh
// random one: a test of duplicate deliveries sends the same id twice. It is
// WithHeader(webhooks.HeaderDelivery, id).
func WithDeliveryID(id string) Option {
	return WithHeader(webhooks.HeaderDelivery, id)
}

// WithHeader sets header key to value after NewRequest has set its own, or
// deletes it when value is empty: a test of a rejected request uses it to
// remove or spoil a header.
func WithHeader(key, value string) Option {
	return func(r *request) {
		if value == "" {
			r.header.Del(key)
		} else {
			r.header.Set(key, value)
		}
	}
}

// NewRequest returns an incoming POST request of a delivery of event with
// payload, signed with secret, as the forge sends it: to webhooks.DefaultPath
// (see WithPath), with Content-Type application/json, User-Agent, the event,
// a fresh delivery id in the forge's UUID form, the hook and target headers,
// and both signatures (SHA-256, and the legacy SHA-1). The target headers name
// the payload's repository, else its organization, else an app.
//
// Like httptest.NewRequest it is for serving to an http.Handler (see Deliver),
// not for an http.Client. It fails the test when secret or payload is empty,
// since the forge signs every delivery of a webhook with a secret.
func NewRequest(t testing.TB, secret, event string, payload []byte, opts ...Option) *http.Request {
	t.Helper()
	sig, err := signing.Sign(secret, payload)
	if err != nil {
		t.Fatalf("webhookstest.NewRequest: %v", err)
	}
	r := request{target: webhooks.DefaultPath, header: http.Header{}}
	h := r.header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set(webhooks.HeaderEvent, event)
	h.Set(webhooks.HeaderDelivery, uuid.New())
	h.Set(HeaderHookID, HookID)
	typ, id := target(payload)
	h.Set(HeaderTargetType, typ)
	h.Set(HeaderTargetID, id)
	h.Set(webhooks.HeaderSignature, sig)
	h.Set(HeaderSignatureSHA1, signSHA1(secret, payload))
	for _, o := range opts {
		o(&r)
	}
	req := httptest.NewRequest(http.MethodPost, r.target, bytes.NewReader(payload))
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}

// Deliver serves req to h and returns the recorded answer, once h has returned.
// A request's body can be delivered once.
func Deliver(t testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	if h == nil || req == nil {
		t.Fatal("webhookstest.Deliver: nil handler or request")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Sign returns payload's signature under secret, "sha256=" and 64 hex digits,
// as signing.Sign does; it fails the test when secret or payload is empty.
func Sign(t testing.TB, secret string, payload []byte) string {
	t.Helper()
	sig, err := signing.Sign(secret, payload)
	if err != nil {
		t.Fatalf("webhookstest.Sign: %v", err)
	}
	return sig
}

// signSHA1 is the legacy signature of X-Hub-Signature.
func signSHA1(secret string, payload []byte) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(payload)
	return signing.PrefixSHA1 + hex.EncodeToString(mac.Sum(nil))
}

// target returns the installation target headers for payload: the forge names
// the resource whose webhook sent the delivery.
func target(payload []byte) (typ, id string) {
	var p struct {
		Repository, Organization *struct {
			ID json.RawMessage `json:"id"`
		}
	}
	// A payload that is not a JSON object (a test of a 400) still gets headers.
	_ = json.Unmarshal(payload, &p)
	switch {
	case p.Repository != nil && isID(p.Repository.ID):
		return "repository", string(p.Repository.ID)
	case p.Organization != nil && isID(p.Organization.ID):
		return "organization", string(p.Organization.ID)
	}
	return "integration", HookID
}

func isID(n json.RawMessage) bool {
	_, err := strconv.ParseUint(string(n), 10, 64)
	return err == nil
}
