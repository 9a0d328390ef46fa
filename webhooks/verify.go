package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
)

// Delivery is one webhook delivery, the one value that carries it from the
// request to its handlers: the middleware builds it, VerifyAndReceive takes
// it, an Inbox stores it, and handlers read it with DeliveryFrom.
type Delivery struct {
	// ID is the delivery's unique id (X-Forge-Delivery); may be empty.
	ID string
	// Name is the event name (X-Forge-Event), such as "issues". Required.
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
	// Attempt counts the runs of this delivery's handlers, from 1; zero is
	// taken as 1. Without an inbox every delivery runs once; an inbox counts
	// its retries.
	Attempt int
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
// The handlers' context carries d (DeliveryFrom), attempt 1 unless d says.
// Under the context of a delivery an Inline Middleware has answered, it
// returns ErrAnswered and does nothing else.
func (w *Webhooks) VerifyAndReceive(ctx context.Context, d Delivery) error {
	if err := w.refuseAnswered(ctx, d); err != nil {
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
	return w.receive(ctx, d)
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
