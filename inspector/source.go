package inspector

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Statuses of a Record. A Source's own deliveries are queued, running,
// handled, retrying, dead or failed; the inspector's bounded ring of requests
// that stored nothing holds rejected and duplicate ones.
const (
	StatusQueued    = "queued"    // stored, waiting for a worker
	StatusRunning   = "running"   // its handlers are running
	StatusHandled   = "handled"   // its handlers succeeded
	StatusRetrying  = "retrying"  // failed, another attempt is scheduled
	StatusDead      = "dead"      // failed every attempt: a dead letter, for Retry
	StatusFailed    = "failed"    // its handlers failed and nothing retries it (no inbox)
	StatusRejected  = "rejected"  // the request was refused (bad signature, 4xx, 503)
	StatusDuplicate = "duplicate" // a delivery id seen before: no handler ran
)

// Errors of a Source.
var (
	// ErrNotFound reports a delivery id the Source does not hold (any more).
	ErrNotFound = errors.New("inspector: no such delivery")
	// ErrNotDead reports a Retry of a delivery that is not a dead letter.
	ErrNotDead = errors.New("inspector: the delivery is not a dead letter")
	// ErrUnsupported reports an action the Source cannot take.
	ErrUnsupported = errors.New("inspector: not supported by this source")
)

// Record is one stored delivery, as a Source gives it.
type Record struct {
	// ID is the delivery id (X-Forge-Delivery).
	ID string
	// Event is the event name (X-Forge-Event) and Action the payload's
	// top-level "action", empty when it has none.
	Event, Action string
	// Header holds the request's headers as received. The inspector never
	// shows the values of secret-bearing headers (see Redact).
	Header http.Header
	// Payload is the body of a verified delivery; nil for a rejected request.
	Payload []byte
	// ReceivedAt is when the request arrived.
	ReceivedAt time.Time
	// Status is one of the Status constants.
	Status string
	// HTTPStatus is the status the forge was answered; 0 when unknown.
	HTTPStatus int
	// Verified reports whether the signature matched.
	Verified bool
	// Reason says why a rejected request was refused.
	Reason string
	// Duration is how long the request took to be answered; 0 when unknown.
	// Rows show the last attempt's duration, and this one for a record
	// without attempts.
	Duration time.Duration
	// Attempts lists every run of the delivery's handlers, oldest first.
	Attempts []Attempt
	// MaxAttempts is how many attempts a retrying delivery gets in all; 0 when
	// unknown or not retried.
	MaxAttempts int
	// Seq orders records: a later record has a greater Seq. ListOptions.Before
	// pages by it.
	Seq uint64
}

// Attempt is one run of a delivery's handlers.
type Attempt struct {
	// Number counts attempts from 1.
	Number int
	// Start is when the attempt began; Duration how long it ran (0 while it
	// runs).
	Start    time.Time
	Duration time.Duration
	// Err is the handlers' error message; empty on success.
	Err string
	// Stack is the stack of a handler that panicked; empty otherwise.
	Stack string
}

// ListOptions selects and pages the records of List.
type ListOptions struct {
	// Status and Event, when set, keep only records with that status or
	// event name (without the action).
	Status, Event string
	// Before, when not 0, keeps only records with Seq < Before: the next page
	// starts before the last Seq of the previous one.
	Before uint64
	// Limit is the most records returned; a Source may use a default for 0.
	Limit int
}

// Source is where the inspector reads stored deliveries: the in-memory Ring,
// or a durable inbox through an adapter. Its methods are safe for concurrent
// use.
type Source interface {
	// List returns records newest first (by Seq, descending).
	List(ctx context.Context, opts ListOptions) ([]Record, error)
	// Get returns the record of delivery id, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Retry schedules a dead letter to run again; an error wrapping
	// ErrNotDead when id is not one.
	Retry(ctx context.Context, id string) error
	// Replay runs the handlers of delivery id again, whatever its status.
	Replay(ctx context.Context, id string) error
	// Watch calls fn with a record each time one is added or changes, until
	// stop is called. fn is quick and never blocks; it may be called from
	// several goroutines at once and must not keep rec.Payload.
	Watch(fn func(rec Record)) (stop func())
}
