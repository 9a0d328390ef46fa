// Package webhooks is forgehooks' facade: it verifies a webhook delivery's
// signature and dispatches it to handlers, and it serves deliveries over HTTP
// with Middleware.
//
//	wh, err := webhooks.New(webhooks.Options{Secret: secret})
//	wh.On("issues.opened", handler)
//	srv := &http.Server{Handler: webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}), ...}
//
// A Webhooks offers the verified ways in (VerifyAndReceive, Middleware) and
// registration; Receive, which does not verify, is there for deliveries
// verified elsewhere (an inbox that stored them, a test). Typed handlers are
// registered with package payloads (payloads.OnPushEvent(wh, …)); this package
// does not import it, so that a program with raw handlers only never compiles
// the generated payload types.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/payloads/names"
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

// MinSecretLen is the shortest secret New accepts without a warning. The
// forge accepts any secret; a short one can be guessed offline from a single
// signed delivery.
const MinSecretLen = 16

// Options configures New.
type Options struct {
	// Secret is the webhook secret, as configured on the forge. Required
	// unless Tenants is set; one shorter than MinSecretLen bytes is accepted
	// with a warning.
	Secret string
	// AdditionalSecrets are also accepted by VerifyAndReceive and the middleware,
	// after Secret and in order: while a secret is rotated, put the new one in
	// Secret and the old one here.
	AdditionalSecrets []string
	// Transform applies to handlers registered with On and OnNames; see
	// emitter.Options.Transform.
	Transform func(ctx context.Context, e emitter.Event) (emitter.Event, error)
	// Logger gets warnings and errors, and with a Middleware its info lines.
	// Nil: slog.Default(), warnings and errors only (see
	// emitter.Options.Logger); a Middleware, an inspector or a receiver
	// built over this Webhooks with no Logger of its own uses this one.
	Logger *slog.Logger
	// KnownEvent tells whether an event name ("issues", "issues.opened") is
	// one the forge sends; registering a name it does not know logs a warning,
	// most likely a typo, and registers the handler all the same (the forge
	// adds events before any schema has them). Nil: the names of this module's
	// schema (names.IsKnown, in package payloads/names, which compiles no typed
	// payload). See emitter.Options.KnownEvent.
	KnownEvent func(name string) bool
	// Variant names the forge's server variant this receiver serves (one of
	// names.Variants, such as "ghes-3.14"): registering a handler for a name
	// the schema records that variant never sends logs a warning. New fails
	// for a variant the schema does not know. Empty: no variant check.
	Variant string
	// MaxErrorReports and MaxErrorReportBytes bound the failed deliveries
	// (forged ones included) whose error handlers run at once, and their
	// payload bytes; past them the error is logged instead. See
	// emitter.Options. Zero: the emitter's defaults. Negative: no bound.
	MaxErrorReports     int
	MaxErrorReportBytes int64
	// Tenants, when set, finds each delivery's tenant and its secrets (see
	// Tenants): the middleware verifies a delivery with its tenant's
	// secrets, not Secret, and its handlers see the tenant in
	// Delivery.Tenant (DeliveryFrom). Secret may then be empty (Sign and Verify, which
	// use it, then fail with ErrMissingSecret).
	Tenants *Tenants
}

// Webhooks verifies deliveries and dispatches them to its handlers. It is safe
// for concurrent use: handlers may be registered and removed while deliveries
// are dispatched.
//
// A Webhooks must be made with New: a zero Webhooks has no secret, and a
// receiver that verifies nothing must not look like one that does, so there
// is no useful zero value; its methods panic with a message that says to call
// New.
//
// Webhooks does not embed its *emitter.Emitter: that would make every Emitter
// method, present and future, part of this API, among them a Receive and
// ReportError that Close does not count. The registration methods are
// delegated one by one instead, each stating its contract here.
type Webhooks struct {
	em      *emitter.Emitter
	keys    *keyring
	tenants *Tenants // nil: one set of secrets

	// inFlight is the one count of deliveries taken on and not finished, with
	// their bytes: what Close waits for, and what MaxInFlight and
	// MaxRunningBytes bound.
	inFlight tracker
}

// New returns a Webhooks for opts. It fails with an error wrapping
// ErrMissingSecret when Secret, or one of AdditionalSecrets, is empty (an
// empty Secret, without AdditionalSecrets, is allowed with Tenants). A
// secret shorter than MinSecretLen is logged as a warning.
func New(opts Options) (*Webhooks, error) {
	keys, err := newKeyring(opts.Secret, opts.AdditionalSecrets...)
	if err != nil && opts.Tenants != nil && opts.Secret == "" && len(opts.AdditionalSecrets) == 0 {
		keys, err = &keyring{}, nil // each tenant has its own
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: New: %w", err)
	}
	if opts.Variant != "" && !names.KnownVariant(opts.Variant) {
		return nil, fmt.Errorf("webhooks: New: unknown server variant %q (the schema knows %q)", opts.Variant, names.Variants())
	}
	em := emitter.New(emitter.Options{
		Transform:           opts.Transform,
		Logger:              opts.Logger,
		KnownEvent:          opts.KnownEvent,
		Variant:             opts.Variant,
		MaxErrorReports:     opts.MaxErrorReports,
		MaxErrorReportBytes: opts.MaxErrorReportBytes,
	})
	w := &Webhooks{em: em, keys: keys, tenants: opts.Tenants}
	for i, s := range keys.secrets {
		if len(s) < MinSecretLen {
			which := "the secret"
			if i > 0 {
				which = fmt.Sprintf("additional secret %d", i)
			}
			w.Logger().Warn("webhooks: short secret: anyone with one signed delivery can guess it offline; use a random secret of at least 16 bytes", "which", which, "length", len(s), "min_length", MinSecretLen)
		}
	}
	return w, nil
}

// notNew is the panic of a method of a Webhooks that New did not make.
const notNew = "webhooks: a Webhooks must be made with webhooks.New (the zero value has no secret)"

// handlers returns w's emitter; it panics with notNew for a zero Webhooks.
func (w *Webhooks) handlers() *emitter.Emitter {
	if w.em == nil {
		panic(notNew)
	}
	return w.em
}

// keyring returns w's secrets; it panics with notNew for a zero Webhooks.
func (w *Webhooks) keyring() *keyring {
	if w.keys == nil {
		panic(notNew)
	}
	return w.keys
}

// Logger returns the logger w uses: Options.Logger, or slog.Default() with
// its debug and info lines dropped.
func (w *Webhooks) Logger() *slog.Logger { return w.handlers().Logger() }

// On registers h for the event name, either an event ("issues") or an event
// and action ("issues.opened"), and returns the registration's handle, for
// RemoveListener. It panics, as http.ServeMux does for a bad pattern, when name
// is empty, "*" (use OnAny) or "error" (use OnError), or when h is nil.
func (w *Webhooks) On(name string, h emitter.Handler) *emitter.Listener {
	return w.handlers().On(name, h)
}

// OnNames registers h under each of names, as On does for one, and returns one
// handle for all of them. It panics when names is empty or when On would.
func (w *Webhooks) OnNames(names []string, h emitter.Handler) *emitter.Listener {
	return w.handlers().OnNames(names, h)
}

// OnDecoded registers h under name with dec, which decodes each delivery of
// name in the pass that validates it (see emitter.Emitter.OnDecoded). Typed
// handlers of a whole event, as package payloads registers them, come this
// way; it panics when dec.Decode is nil or when On would.
func (w *Webhooks) OnDecoded(name string, dec emitter.Decoder, h emitter.Handler) *emitter.Listener {
	return w.handlers().OnDecoded(name, dec, h)
}

// OnAny registers h for every event and returns the registration's handle. It
// panics when h is nil.
func (w *Webhooks) OnAny(h emitter.Handler) *emitter.Listener { return w.handlers().OnAny(h) }

// OnError registers h to be told of every failed delivery (failed handlers, or
// a signature that does not match), and returns the registration's handle.
// Error handlers run on their own goroutines, for at most
// Options.MaxErrorReports deliveries at once; Close waits for them. It panics when h is
// nil.
func (w *Webhooks) OnError(h emitter.ErrorHandler) *emitter.Listener { return w.handlers().OnError(h) }

// Handles reports whether a delivery of event with action would run a
// handler (see emitter.Emitter.Handles).
func (w *Webhooks) Handles(event, action string) bool { return w.handlers().Handles(event, action) }

// Names returns the names handlers are registered for ("issues.opened",
// "push"), typed handlers included, sorted, each once: what the app must be
// able to receive (app.App.CheckSubscriptions checks it). Handlers of OnAny
// and OnError are for no name. The slice is the caller's.
func (w *Webhooks) Names() []string { return w.handlers().Names() }

// RemoveListener removes the most recent registration of l under name: an
// event name as given to On, "*" for OnAny, or "error" for OnError. It reports
// whether there was one. Deliveries already started still run the handler.
func (w *Webhooks) RemoveListener(name string, l *emitter.Listener) bool {
	return w.handlers().RemoveListener(name, l)
}

// RemoveListenerNames is RemoveListener for each of names, as one change: the
// counterpart of OnNames. It returns how many registrations it removed.
func (w *Webhooks) RemoveListenerNames(names []string, l *emitter.Listener) int {
	return w.handlers().RemoveListenerNames(names, l)
}

// Receive dispatches e to its handlers WITHOUT checking any signature: use it
// only for a delivery verified already (one an inbox stored after the
// middleware verified it, say) or in tests. Deliveries from the network go
// through VerifyAndReceive or the Middleware. It is emitter.Emitter.Receive,
// counted for Close: after Close it returns emitter.ErrClosed. The handlers'
// context carries the delivery (DeliveryFrom) with e's Payload: the Delivery
// ctx carries already when it has e's ID and Name (an inbox or a replay sets
// its Header, Attempt and Tenant that way, with ContextWithDelivery), and
// otherwise one of e's ID, Name and Payload, attempt 1. Under the context of
// a delivery an Inline Middleware has answered, it returns ErrAnswered and
// runs nothing.
func (w *Webhooks) Receive(ctx context.Context, e emitter.Event) error {
	d, ok := DeliveryFrom(ctx)
	if !ok || d.ID != e.ID || d.Name != e.Name {
		d = Delivery{ID: e.ID, Name: e.Name}
	}
	d.Payload = e.Payload
	return w.receive(ctx, d)
}

// ReceiveDelivery dispatches d to its handlers WITHOUT checking its
// signature, like Receive: for a delivery verified already, such as one an
// inbox stored after the middleware verified it (inbox.Receiver). The
// handlers' context carries d itself (DeliveryFrom), with its Header,
// Attempt and Tenant, whatever ctx carries. Counted for Close: after Close
// it returns emitter.ErrClosed. Under the context of a delivery an Inline
// Middleware has answered, it returns ErrAnswered and runs nothing.
func (w *Webhooks) ReceiveDelivery(ctx context.Context, d Delivery) error {
	return w.receive(ctx, d)
}

// receive dispatches d, counted for Close: Receive, ReceiveDelivery and VerifyAndReceive.
func (w *Webhooks) receive(ctx context.Context, d Delivery) error {
	if err := w.refuseAnswered(ctx, d); err != nil {
		return err
	}
	f, err := w.inFlight.take(d.ID, int64(len(d.Payload)), 0, 0)
	if err != nil {
		return emitter.ErrClosed
	}
	defer w.inFlight.finish(f)
	return w.emit(ctx, d, false)
}

// emit is the one way into the emitter, for the middleware, Receive and
// VerifyAndReceive: it puts d in the handlers' context (DeliveryFrom) and
// runs them. The caller has counted d for Close. owned says that d.Payload
// is a body the middleware read for this delivery alone, which nothing
// modifies or reuses (emitter.Emitter.ReceiveOwned); a payload a caller
// passed in may be its buffer to reuse.
func (w *Webhooks) emit(ctx context.Context, d Delivery, owned bool) error {
	em := w.handlers()
	if d.Attempt == 0 {
		d.Attempt = 1
	}
	e := emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload}
	if owned {
		return em.ReceiveOwned(ContextWithDelivery(ctx, d), e)
	}
	return em.Receive(ContextWithDelivery(ctx, d), e)
}

// Sign returns payload's signature under the primary secret, as the forge
// computes it: "sha256=" and 64 lower-case hex digits. An empty payload is
// signing.ErrMissingPayload.
func (w *Webhooks) Sign(payload []byte) (string, error) {
	return signing.Sign(w.keyring().primary(), payload)
}

// Verify reports whether signature is payload's signature under the primary
// secret (not the additional ones; VerifyAndReceive tries those too). It errs
// only for an empty payload or signature.
func (w *Webhooks) Verify(payload []byte, signature string) (bool, error) {
	return signing.Verify(w.keyring().primary(), payload, signature)
}

// Close stops w and waits for the work it has taken on. Middlewares serving w
// answer 503 to new deliveries from the moment Close is called, and Receive
// and VerifyAndReceive return emitter.ErrClosed. Close waits until every
// delivery taken on — including those a Middleware answered 202 whose
// handlers are still running, and those whose handlers have not started yet —
// has finished, and then for the error handlers still running. When ctx is
// done first, Close returns ctx's error; deliveries whose handlers had not
// started by then are dropped and logged with their ids, and those still
// running are logged with theirs.
//
// For a graceful shutdown call http.Server.Shutdown first, so that requests
// being answered get their answer, then Close.
func (w *Webhooks) Close(ctx context.Context) error {
	em := w.handlers()
	idle := w.inFlight.close()
	select {
	case <-idle:
	case <-ctx.Done():
		em.Close(ctx) // so that handlers not yet started never do
		for _, id := range w.inFlight.running() {
			w.Logger().Error("webhooks: shutdown deadline passed; delivery abandoned while its handlers ran", "delivery", clip.String(id))
		}
		return ctx.Err()
	}
	return em.Close(ctx)
}
