package webhooks

import (
	"context"
	"net/http"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// DeliveryInfo describes the delivery whose handlers are running. Handlers read
// it with DeliveryFrom.
type DeliveryInfo struct {
	// ID is the delivery's unique id (X-Forge-Delivery); may be empty.
	ID string
	// Event is the event name (X-Forge-Event), such as "issues".
	Event string
	// Header holds the request's headers as received, when the delivery came
	// over HTTP; nil otherwise. Handlers must not change it.
	Header http.Header
	// ReceivedAt is when the delivery arrived; zero when unknown.
	ReceivedAt time.Time
	// Attempt counts the runs of this delivery's handlers, from 1. Without an
	// inbox every delivery runs once; an inbox counts its retries.
	Attempt int
	// Tenant is the name of the tenant whose secret the delivery verified
	// with (Options.Tenants); empty without tenants.
	Tenant string
}

type deliveryKey struct{}

// ContextWithDelivery returns a copy of ctx that carries info, for DeliveryFrom.
// The middleware and VerifyAndReceive call it for every delivery; an inbox that
// runs a stored delivery's handlers calls it with the attempt number.
func ContextWithDelivery(ctx context.Context, info DeliveryInfo) context.Context {
	return context.WithValue(ctx, deliveryKey{}, &info)
}

// DeliveryFrom returns the DeliveryInfo of the delivery whose handlers ctx was
// given to, and false when ctx carries none (a Receive called directly).
func DeliveryFrom(ctx context.Context) (DeliveryInfo, bool) {
	if info, ok := ctx.Value(deliveryKey{}).(*DeliveryInfo); ok {
		return *info, true
	}
	return DeliveryInfo{}, false
}

type eventKey struct{}

// withEvent returns a copy of ctx that carries e, for EventFrom.
func withEvent(ctx context.Context, e emitter.Event) context.Context {
	return context.WithValue(ctx, eventKey{}, &e)
}

// EventFrom returns the delivery whose handlers ctx was given to, as it
// reached Receive or the Middleware: its id, event name and body, before any
// Transform. It lets code called from a handler read the body without
// decoding it (package app finds the installation there). ok is false when
// ctx did not come from this package's dispatch. The Payload must not be
// changed.
func EventFrom(ctx context.Context) (e emitter.Event, ok bool) {
	if p, ok := ctx.Value(eventKey{}).(*emitter.Event); ok {
		return *p, true
	}
	return emitter.Event{}, false
}

// Inbox stores verified deliveries durably, so that they are handled later
// (package inbox implements it on NATS JetStream). With MiddlewareOptions.Inbox
// set, the middleware runs no handler itself: it verifies a delivery, checks
// that its body is a JSON object, and calls Enqueue; it answers 202 once
// Enqueue returns nil, 200 for a duplicate, and 503 (with Retry-After) when
// Enqueue fails, so that the forge marks the delivery failed instead of it
// being lost. An Inbox that also implements InboxResult can answer that a
// dead letter runs again (202 "requeued").
type Inbox interface {
	// Enqueue stores d, or reports duplicate when a delivery with d.ID is
	// stored already (d is then not stored again). It returns only once d is
	// stored, or with an error when it cannot be within ctx. A delivery with
	// an empty ID is never a duplicate.
	Enqueue(ctx context.Context, d Delivery) (duplicate bool, err error)
}

// Result is what became of one request to the middleware, given to
// MiddlewareOptions.OnResult once per request.
type Result struct {
	// ID and Event are the delivery and event headers as sent; empty when
	// missing. Values from a rejected request are not verified.
	ID, Event string
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
