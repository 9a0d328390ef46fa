package emitter

import "strings"

// Error is the error of a delivery whose handlers failed. Receive returns it, and
// every error handler is given it.
type Error struct {
	// Event is the delivery the handlers failed on.
	Event Event
	// Errors holds every handler's error, at least one.
	Errors []error
}

// Error returns the handlers' messages, one per line.
func (e *Error) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns every handler error, so that errors.Is and errors.As look at each.
func (e *Error) Unwrap() []error { return e.Errors }
