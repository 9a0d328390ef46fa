package payloads

import codec "forgehooks.dev/forgehooks/payloads/codec"

// Payload is the typed payload of one delivery: a generated event struct (such as
// *PushEvent or *IssuesOpenedEvent), an event's unknown-action type (such as
// *IssuesUnknownEvent), or *UnknownEvent for an event the schema does not know.
// Parse returns one; a type switch tells them apart.
//
// Its methods are MarshalJSON and PayloadName, which returns the name the
// payload was delivered under; an unexported method keeps every other type out.
type Payload = codec.Payload

// UnknownEvent is the payload of an event the schema does not know: the forge
// adds events before any schema has them, and older servers send retired ones.
// It keeps the whole payload: Name is the event name it arrived with, Action the
// payload's top-level "action" when that is a string (else ""), and Raw the
// payload, a JSON object, as received. MarshalJSON returns Raw ({} when empty).
type UnknownEvent = codec.UnknownEvent

// PayloadName returns the name p was delivered under, p.PayloadName():
// "event.action" for a payload with an action, "event" otherwise. For the
// unknown types it is the name and action that arrived.
func PayloadName(p Payload) string { return p.PayloadName() }

// Event is a delivery whose payload has been decoded into P, as typed handlers
// get it: ID is the delivery's unique id (may be empty), Name the event name,
// such as "issues" (also for handlers of an action), and Payload the decoded
// payload.
type Event[P any] = codec.Event[P]

// Registrar is anything typed handlers can be registered with: an
// *emitter.Emitter, a *webhooks.Webhooks, or a wrapper of either. Registering
// one handler for several actions (On…Event(r, h, "opened", "synchronize"))
// also needs OnNames, which both have.
type Registrar = codec.Registrar
