// Package emitter dispatches webhook events to the handlers registered for them.
// It is usable on its own, without signature verification: see package webhooks for
// the facade that verifies first.
package emitter
