package emitter

import "context"

type waitReportsKey struct{}

// WaitForErrorHandlers returns a copy of ctx under which ReportError, and
// Receive when it reports failed handlers, return only once every error
// handler told has returned, instead of leaving them running. It is for a
// process that must do nothing after it answers: a function platform freezes
// or stops it then, and an error handler still running would not run to its
// end, or would run at the start of some later request.
func WaitForErrorHandlers(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitReportsKey{}, true)
}
