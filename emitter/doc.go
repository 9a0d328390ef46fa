// Package emitter dispatches webhook events to the handlers registered for them.
// It is usable on its own, without signature verification: see package webhooks for
// the facade that verifies first.
//
// A delivery whose payload has a top-level string "action" runs the handlers of
// "name.action", of "name" and of every event (OnAny), concurrently; Receive waits
// for them all and returns their errors in one *Error, which error handlers
// (OnError) are told about too. Registration is safe while deliveries are being
// dispatched: dispatch reads an immutable snapshot and takes no lock.
//
// Receive validates each payload before any handler runs. The typed handlers
// of package payloads for a whole event validate by decoding instead, in the
// same pass, so that such a delivery is not read twice.
package emitter
