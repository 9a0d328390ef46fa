package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

type deliveryKey struct{}

// ContextWithDelivery returns a copy of ctx that carries d, for DeliveryFrom.
// Every dispatch of this package (the middleware, Receive, VerifyAndReceive)
// sets it; an inbox that runs a stored delivery's handlers sets it with the
// delivery's Attempt before calling Receive, which keeps it (see Receive).
func ContextWithDelivery(ctx context.Context, d Delivery) context.Context {
	return &deliveryContext{Context: ctx, d: d}
}

// deliveryContext is context.WithValue(ctx, deliveryKey{}, &d) in one
// allocation instead of two (the value and the context), since every
// delivery makes one.
type deliveryContext struct {
	context.Context
	d Delivery
}

func (c *deliveryContext) Value(key any) any {
	if _, ok := key.(deliveryKey); ok {
		return &c.d
	}
	return c.Context.Value(key)
}

func (c *deliveryContext) String() string {
	return fmt.Sprintf("%v.WithValue(webhooks.deliveryKey, %q)", c.Context, c.d.ID)
}

// DeliveryFrom returns the delivery whose handlers ctx was given to: its id,
// event name and body as it reached the middleware, VerifyAndReceive or
// Receive (before any Transform), with its headers, received time, attempt
// and tenant where known. It lets code called from a handler read the body
// without decoding it (package app finds the installation there). ok is false
// when ctx carries no delivery. The Payload and Header must not be changed.
func DeliveryFrom(ctx context.Context) (d Delivery, ok bool) {
	if p, ok := ctx.Value(deliveryKey{}).(*Delivery); ok {
		return *p, true
	}
	return Delivery{}, false
}

// Inbox stores verified deliveries durably, so that they are handled later
// (package inbox implements it on NATS JetStream). With MiddlewareOptions.Inbox
// set, the middleware runs no handler itself: it verifies a delivery, checks
// that its body is a JSON object, and calls Enqueue; it answers 202 once
// Enqueue returns nil, 200 for a duplicate, and 503 (with Retry-After) when
// Enqueue fails, so that the forge marks the delivery failed instead of it
// being lost; a dead letter that runs again is answered 202 "requeued".
type Inbox interface {
	// Enqueue stores d and returns Enqueued, or returns Duplicate when a
	// delivery with d.ID is stored already (d is then not stored again), or
	// Requeued when that delivery is a dead letter that now runs again. It
	// returns only once d is stored, or with an error when it cannot be
	// within ctx. A delivery with an empty ID is never a duplicate. A body
	// that is not one JSON object is refused with an error wrapping
	// ErrInvalidPayload (the middleware answers 400), so that what is stored
	// need not be checked again when it runs.
	Enqueue(ctx context.Context, d Delivery) (EnqueueResult, error)
}

// Result is what became of one request to the middleware, given to
// MiddlewareOptions.OnResult once per request.
type Result struct {
	// ID and Name are the delivery and event headers as sent (Delivery.ID
	// and Delivery.Name); empty when missing. Values from a rejected request
	// are not verified.
	ID, Name string
	// Action is the payload's top-level "action", for a verified delivery.
	Action string
	// Status is the HTTP status answered: 200, 202 (handlers still running,
	// or stored by an inbox), or the status of a rejection or failure.
	Status int
	// Duration runs from the start of the request until its handlers returned
	// (for a 202 of the timeout, when they returned later) or, for a request
	// that ran no handler, until its answer.
	Duration time.Duration
	// Err is why the request was rejected or its handlers failed; nil for a
	// delivery handled, stored or found a duplicate.
	Err error
	// Verified reports whether the signature matched.
	Verified bool
	// Duplicate reports a delivery the inbox held already.
	Duplicate bool
	// Ignored reports a verified delivery that no filter accepted
	// (MiddlewareOptions.Accept, AcceptHandled): answered 200 "ignored".
	Ignored bool
	// Header holds the request's headers.
	Header http.Header
	// Payload is the body of a verified delivery; nil otherwise. It must not
	// be changed.
	Payload []byte
	// ReceivedAt is when the request arrived.
	ReceivedAt time.Time
	// Tenant is the tenant the request was resolved to (Options.Tenants):
	// a name the SecretSource gave, never one only the request claimed
	// (empty for a key that names no tenant).
	Tenant string
}
