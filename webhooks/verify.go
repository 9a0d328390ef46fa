package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
)

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
	// Tenant names the delivery's tenant (Options.Tenants); empty without
	// tenants. An inbox keeps it with the delivery, and dedupes per tenant.
	Tenant string
}

// VerifyAndReceive checks d's signature against the primary and then each
// additional secret, and dispatches d as Receive does when one matches.
//
// When none matches (or the signature or payload is missing), no handler runs;
// the error handlers are told with an *emitter.Error whose Event is d; and the
// error returned wraps ErrSignatureMismatch (and the signing error that caused
// it, if any) and names the delivery. With Options.Tenants and d.Tenant set,
// the secrets are that tenant's (looked up by name, as a path value would
// be; an unknown one is an error wrapping ErrUnknownTenant). Otherwise the result is Receive's: nil, an
// *emitter.Error from failed handlers, or an error wrapping ErrInvalidPayload.
// The handlers' context carries d's DeliveryInfo (DeliveryFrom), attempt 1.
// Under the context of a delivery an Inline Middleware has answered, it
// returns ErrAnswered and does nothing else.
func (w *Webhooks) VerifyAndReceive(ctx context.Context, d Delivery) error {
	if err := w.refuseAnswered(ctx, emitter.Event{ID: d.ID, Name: d.Name}); err != nil {
		return err
	}
	keys := w.keyring()
	if d.Tenant != "" && w.tenants != nil {
		tk, err := w.tenants.resolve(ctx, TenantKey{Path: d.Tenant})
		if err != nil {
			return fmt.Errorf("webhooks: delivery %q: tenant %q: %w", clip.String(d.ID), clip.String(d.Tenant), err)
		}
		keys = tk.keys
	}
	ok, err := keys.verify(d.Payload, d.Signature)
	if !ok {
		return w.mismatch(ctx, d, err)
	}
	ctx = ContextWithDelivery(ctx, DeliveryInfo{ID: d.ID, Event: d.Name, Header: d.Header, ReceivedAt: d.ReceivedAt, Attempt: 1, Tenant: d.Tenant})
	return w.Receive(ctx, emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload})
}

// mismatch builds the error of a delivery whose signature failed and tells the
// error handlers.
func (w *Webhooks) mismatch(ctx context.Context, d Delivery, cause error) error {
	var err error
	if cause != nil {
		err = fmt.Errorf("webhooks: delivery %q (event %q): %w: %w", clip.String(d.ID), clip.String(d.Name), ErrSignatureMismatch, cause)
	} else {
		err = fmt.Errorf("webhooks: delivery %q (event %q): %w", clip.String(d.ID), clip.String(d.Name), ErrSignatureMismatch)
	}
	w.handlers().ReportError(ctx, &emitter.Error{
		Event:  emitter.Event{ID: d.ID, Name: d.Name, Payload: d.Payload},
		Errors: []error{err},
	})
	return err
}
