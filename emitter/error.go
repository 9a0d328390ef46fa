package emitter

import (
	"fmt"
	"strings"
)

// Error is the error of a delivery whose handlers failed. Receive returns it, and
// every error handler is given it. Error handlers share one *Error and must not
// modify it.
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

// PanicError is the error of a handler (or Transform) that panicked.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack gives it.
	Stack []byte

	what string // "handler", "transform" or "error handler"
}

// Error says that the handler panicked, and with what.
func (e *PanicError) Error() string {
	what := e.what
	if what == "" {
		what = "handler"
	}
	return fmt.Sprintf("emitter: %s panicked: %v", what, e.Value)
}

// Unwrap returns the panic value when it is an error, so that errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
