// Package webhooks is forgehooks' facade: it verifies a webhook delivery's
// signature and dispatches it to the handlers of an embedded emitter.Emitter,
// and it serves deliveries over HTTP with Middleware.
//
//	wh, err := webhooks.New(webhooks.Options{Secret: secret})
//	wh.On("issues.opened", handler)
//	http.Handle("/", webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}))
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/signing"
)

var (
	// ErrMissingSecret is returned by New without a secret (or with an empty
	// additional one). It is signing.ErrMissingSecret.
	ErrMissingSecret = signing.ErrMissingSecret
	// ErrSignatureMismatch is wrapped by VerifyAndReceive's error when the
	// signature is missing, malformed, or made with another secret.
	ErrSignatureMismatch = errors.New("signature does not match event payload and secret")
	// ErrInvalidPayload is wrapped by the error for a payload that is not a JSON
	// object. It is emitter.ErrInvalidPayload.
	ErrInvalidPayload = emitter.ErrInvalidPayload
)

// Options configures New.
type Options struct {
	// Secret is the webhook secret, as configured on the forge. Required.
	Secret string
	// AdditionalSecrets are also accepted by VerifyAndReceive and the middleware,
	// after Secret and in order: while a secret is rotated, put the new one in
	// Secret and the old one here.
	AdditionalSecrets []string
	// Transform applies to handlers registered with On and OnNames; see
	// emitter.Options.Transform.
	Transform func(ctx context.Context, e emitter.Event) (emitter.Event, error)
	// Logger gets warnings and errors. Nil: text on stderr, where debug and info
	// are silent and warnings and errors are shown.
	Logger *slog.Logger
}

// Webhooks verifies deliveries and dispatches them. The embedded Emitter gives
// it On, OnNames, OnAny, OnError, RemoveListener and Receive (no signature
// check); Close is its own. It is safe for concurrent use.
type Webhooks struct {
	*emitter.Emitter
	secret     string
	additional []string

	// accepted counts deliveries a Middleware has taken on: from before its
	// answer (so that a 202 is never sent for a delivery Close could miss)
	// until Receive returns.
	accepted tracker

	// digests holds *signing.Digest keyed with secret, reset, for reuse: keying
	// an HMAC costs two SHA-256 blocks and several allocations per delivery.
	digests sync.Pool
}

// digest returns a Digest keyed with the primary secret, with nothing written.
func (w *Webhooks) digest() *signing.Digest {
	if d, ok := w.digests.Get().(*signing.Digest); ok {
		return d
	}
	d, _ := signing.NewDigest(w.secret) // New guarantees a secret
	return d
}

// release resets d, from digest, and keeps it for another delivery.
func (w *Webhooks) release(d *signing.Digest) {
	d.Reset()
	w.digests.Put(d)
}

// New returns a Webhooks for opts. It fails with an error wrapping
// ErrMissingSecret when Secret, or one of AdditionalSecrets, is empty.
func New(opts Options) (*Webhooks, error) {
	if opts.Secret == "" {
		return nil, fmt.Errorf("webhooks: New: %w", ErrMissingSecret)
	}
	for i, s := range opts.AdditionalSecrets {
		if s == "" {
			return nil, fmt.Errorf("webhooks: New: additional secret %d of %d is empty: %w", i+1, len(opts.AdditionalSecrets), ErrMissingSecret)
		}
	}
	return &Webhooks{
		Emitter: emitter.New(emitter.Options{
			Transform: opts.Transform,
			Logger:    opts.Logger,
			// A name the schema does not know is most likely a typo; it is
			// still registered, since the forge adds events before any schema.
			KnownEvent: payloads.IsKnownEventName,
		}),
		secret:     opts.Secret,
		additional: append([]string(nil), opts.AdditionalSecrets...),
	}, nil
}

// Sign returns payload's signature under the primary secret, as the forge
// computes it: "sha256=" and 64 lower-case hex digits. An empty payload is
// signing.ErrMissingPayload.
func (w *Webhooks) Sign(payload []byte) (string, error) {
	return signing.Sign(w.secret, payload)
}

// Verify reports whether signature is payload's signature under the primary
// secret (not the additional ones; VerifyAndReceive tries those too). It errs
// only for an empty payload or signature.
func (w *Webhooks) Verify(payload []byte, signature string) (bool, error) {
	return signing.Verify(w.secret, payload, signature)
}

// Close stops w and waits for the work it has taken on. Middlewares serving w
// answer 503 to new deliveries from the moment Close is called. Close waits
// until every delivery a Middleware has accepted — including those answered
// 202 whose handlers are still running, and those whose handlers have not
// started yet — has finished; then it closes the Emitter, so that Receive
// returns emitter.ErrClosed, and waits for the error handlers still running.
// When ctx is done first, Close closes the Emitter at once and returns ctx's
// error (deliveries whose handlers had not started by then are dropped, and
// logged).
//
// For a graceful shutdown call http.Server.Shutdown first, so that requests
// being answered get their answer, then Close.
func (w *Webhooks) Close(ctx context.Context) error {
	idle := w.accepted.close()
	select {
	case <-idle:
	case <-ctx.Done():
		w.Emitter.Close(ctx) // so that Receive refuses from now on
		return ctx.Err()
	}
	return w.Emitter.Close(ctx)
}

// tracker counts work in flight and, once closed, refuses more and tells when
// the last piece ends. The zero value is ready to use.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // made by close; closed when closed and n == 0
}

// add records one more piece of work, or reports false once closed.
func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

// done ends a piece of work that add recorded.
func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.closed {
		close(t.idle)
	}
}

// close refuses further work and returns a channel closed when none is left.
func (t *tracker) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		t.idle = make(chan struct{})
		if t.n == 0 {
			close(t.idle)
		}
	}
	return t.idle
}

// Delivery is one webhook delivery as the forge sends it.
type Delivery struct {
	// ID is the delivery's unique id (X-Forge-Delivery); may be empty.
	ID string
	// Name is the event name (X-Forge-Event). Required.
	Name string
	// Payload is the request body, byte for byte. Required.
	Payload []byte
	// Signature is the X-Hub-Signature-256 header's value.
	Signature string
	// Header holds the request's headers when the delivery came over HTTP;
	// nil otherwise. It is not verified: only Payload is signed.
	Header http.Header
	// ReceivedAt is when the delivery arrived; zero when unknown.
	ReceivedAt time.Time
}

// VerifyAndReceive checks d's signature against the primary and then each
// additional secret, and dispatches d as Receive does when one matches.
//
// When none matches (or the signature or payload is missing), no handler runs;
// the error handlers are told with an *emitter.Error whose Event is d; and the
// error returned wraps ErrSignatureMismatch (and the signing error that caused
// it, if any) and names the delivery. Otherwise the result is Receive's: nil, an
// *emitter.Error from failed handlers, or an error wrapping ErrInvalidPayload.
// The handlers' context carries d's DeliveryInfo (DeliveryFrom), attempt 1.
func (w *Webhooks) VerifyAndReceive(ctx context.Context, d Delivery) error {
	var ok bool
	var err error
	if len(d.Payload) == 0 || d.Signature == "" {
		// signing says which argument is missing.
		ok, err = signing.VerifyWithFallback(w.secret, d.Payload, d.Signature, w.additional...)
	} else {
		digest := w.digest()
		digest.Write(d.Payload)
		ok = w.verifyDigest(digest, d.Payload, d.Signature)
		w.release(digest)
	}
	if !ok {
		return w.mismatch(ctx, d, err)
	}
	ctx = ContextWithDelivery(ctx, DeliveryInfo{ID: d.ID, Event: d.Name, Header: d.Header, ReceivedAt: d.ReceivedAt, Attempt: 1})
	return w.Receive(ctx, emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload})
}

// mismatch builds the error of a delivery whose signature failed and tells the
// error handlers.
func (w *Webhooks) mismatch(ctx context.Context, d Delivery, cause error) error {
	var err error
	if cause != nil {
		err = fmt.Errorf("webhooks: delivery %q (event %q): %w: %w", d.ID, d.Name, ErrSignatureMismatch, cause)
	} else {
		err = fmt.Errorf("webhooks: delivery %q (event %q): %w", d.ID, d.Name, ErrSignatureMismatch)
	}
	w.ReportError(ctx, &emitter.Error{
		Event:  emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload},
		Errors: []error{err},
	})
	return err
}
