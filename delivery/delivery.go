// Package delivery is the vocabulary of a stored webhook delivery, shared by
// whatever stores deliveries (the durable inbox, the inspector's in-memory
// ring) and whatever reads them (the inspector page, the command line, an
// admin endpoint): a Record and its Attempts, one Status, ListOptions, the
// errors, and the Store interface.
//
// It depends on the standard library alone, so that a reader of stored
// deliveries needs neither NATS nor the generated payload types.
package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Status is where a delivery stands.
type Status string

// The statuses. A Store's own deliveries are queued, running, handled,
// retrying, dead or failed; rejected and duplicate are requests that stored
// nothing (the inspector keeps a bounded ring of them).
const (
	StatusQueued    Status = "queued"    // stored; no attempt finished yet
	StatusRunning   Status = "running"   // its handlers are running
	StatusHandled   Status = "handled"   // an attempt succeeded
	StatusRetrying  Status = "retrying"  // an attempt failed; another is scheduled
	StatusDead      Status = "dead"      // every attempt failed: a dead letter, for Retry
	StatusFailed    Status = "failed"    // its handlers failed and nothing retries it (no inbox)
	StatusRejected  Status = "rejected"  // the request was refused (bad signature, 4xx, 503)
	StatusDuplicate Status = "duplicate" // a delivery id seen before: no handler ran
)

// Statuses lists every Status, in the order above.
func Statuses() []Status {
	return []Status{StatusQueued, StatusRunning, StatusHandled, StatusRetrying, StatusDead, StatusFailed, StatusRejected, StatusDuplicate}
}

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	for _, x := range Statuses() {
		if s == x {
			return true
		}
	}
	return false
}

// Errors of a Store; those returned wrap them with context, so test them with
// errors.Is.
var (
	// ErrNotFound reports a delivery id the Store does not hold (any more).
	ErrNotFound = errors.New("no such delivery")
	// ErrNotDead reports a Retry of a delivery that is not a dead letter.
	ErrNotDead = errors.New("the delivery is not a dead letter")
	// ErrUnsupported reports an operation the Store cannot perform.
	ErrUnsupported = errors.New("not supported by this store")
)

// Record is one stored delivery.
type Record struct {
	// ID is the delivery id (X-Forge-Delivery); empty for a delivery stored
	// without one.
	ID string
	// Tenant is the tenant whose secret the delivery verified with (see
	// webhooks.Tenants); empty without tenants.
	Tenant string
	// Name is the event name (X-Forge-Event), as emitter.Event.Name and
	// webhooks.Delivery.Name say it, and Action the payload's top-level
	// "action", empty when it has none.
	Name, Action string
	// Repository ("owner/name") and Sender (a login) are read from the
	// payload when it is stored, so that a list can show them without
	// loading it; empty when the payload has none.
	Repository, Sender string
	// Header holds the request's headers as received or stored. Readers
	// that show them hide secret-bearing values.
	Header http.Header
	// Payload is the body, byte for byte. List leaves it nil; Get fills it,
	// up to the Store's cap: when len(Payload) < Size the payload was cut
	// there (see Store.Get).
	Payload []byte
	// Size is the payload's length in bytes, also when Payload is nil or
	// cut; 0 when unknown (a rejected request stores no body).
	Size int64
	// ReceivedAt is when the delivery arrived.
	ReceivedAt time.Time
	// Status is where the delivery stands.
	Status Status
	// HTTPStatus is the status the forge was answered; 0 when unknown.
	HTTPStatus int
	// Verified reports whether the signature matched (a durable store holds
	// verified deliveries only).
	Verified bool
	// Reason says why a rejected request was refused.
	Reason string
	// Duration is how long the request took to be answered; 0 when unknown.
	Duration time.Duration
	// Attempts lists the finished runs of the delivery's handlers, oldest
	// first (a Store may keep only the most recent ones).
	Attempts []Attempt
	// MaxAttempts is how many attempts a retried delivery gets in all; 0
	// when unknown or not retried.
	MaxAttempts int
	// Seq orders records: a later record has a greater Seq. ListOptions.Before
	// pages by it. For an inbox it is the delivery's stream sequence; 0 for a
	// dead letter whose stored copy aged out.
	Seq uint64
}

// PayloadName is the event name with its action: "issues.opened", or "push"
// when the payload has no action. It is named as the generated payload
// types' PayloadName, which says the same of a decoded payload, and is the
// name a handler registers for (emitter.Emitter.On).
func (r *Record) PayloadName() string {
	if r.Action == "" {
		return r.Name
	}
	return r.Name + "." + r.Action
}

// UnmarshalJSON decodes a Record as encoding/json does, and also takes the
// event name from the key "Event" when "Name" is absent or empty: records
// encoded by a release before Name was so called (the admin socket of an
// inbox process not yet restarted, a user's own saved records) keep their
// event name.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record // without this method
	v := struct {
		plain
		Event string
	}{plain: plain(*r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Name == "" {
		v.Name = v.Event
	}
	*r = Record(v.plain)
	return nil
}

// LastError is the error of the last attempt; "" when it succeeded or none
// finished.
func (r *Record) LastError() string {
	if n := len(r.Attempts); n > 0 {
		return r.Attempts[n-1].Err
	}
	return ""
}

// Final reports whether the last attempt's error was final
// (webhooks.Permanent), so that the delivery went to the dead letters
// without a retry.
func (r *Record) Final() bool {
	n := len(r.Attempts)
	return n > 0 && r.Attempts[n-1].Final
}

// Attempt is one run of a delivery's handlers. Its field names are part of
// the inbox's stored format.
type Attempt struct {
	// Number counts the runs of the delivery, from 1; it goes on across
	// retries of a dead letter, replays and restarts.
	Number int
	// Start is when the run began; Duration how long it took (0 while it
	// runs).
	Start    time.Time
	Duration time.Duration
	// Err is the run's error message; empty on success.
	Err string
	// Stack is the stack of a handler that panicked; empty otherwise.
	Stack string `json:",omitempty"`
	// Final says that the run's error was final (webhooks.Permanent): the
	// delivery was not retried after it.
	Final bool `json:",omitempty"`
}

// DefaultListLimit is the limit a Store uses when ListOptions.Limit is zero.
const DefaultListLimit = 50

// ListOptions selects and pages the records of Store.List.
type ListOptions struct {
	// Status and Name, when set, keep only records with that status or
	// event name (Record.Name, without the action).
	Status Status
	Name   string
	// Tenant, when set, keeps only the records of that tenant.
	Tenant string
	// Before, when not 0, keeps only records with Seq < Before: the next page
	// starts before the last Seq of the previous one.
	Before uint64
	// Limit is the most records returned; zero: DefaultListLimit.
	Limit int
}

// Store holds deliveries and answers for them. Its methods are safe for
// concurrent use.
type Store interface {
	// List returns records newest first (by Seq, descending), without their
	// payloads: Payload is nil, Size, Repository and Sender are set. Its
	// memory and work do not grow with the payloads' sizes.
	List(ctx context.Context, opts ListOptions) ([]Record, error)
	// Get returns the record of delivery id with its payload, or an error
	// wrapping ErrNotFound. A Store may cut a payload larger than its cap
	// (the record's Size then says how large it was); the inbox and the
	// inspector's ring never do for a payload the middleware accepted.
	Get(ctx context.Context, id string) (Record, error)
	// Retry schedules a dead letter to run again, on a fresh retry schedule;
	// an error wrapping ErrNotDead when id is not one.
	Retry(ctx context.Context, id string) error
	// Replay runs the handlers of delivery id again, whatever its status.
	Replay(ctx context.Context, id string) error
	// Watch calls fn with a record each time one is added or changes, until
	// stop is called. The record carries no payload. fn is quick and never
	// blocks; it may be called from several goroutines at once.
	Watch(fn func(rec Record)) (stop func())
}
