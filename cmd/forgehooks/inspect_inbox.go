package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/inspector"
)

// inboxSource shows serve's durable inbox on the inspector page: the
// inspector's Source over *inbox.Inbox, here so that package inspector stays
// free of NATS.
type inboxSource struct {
	inspector.Watchers
	in  *inbox.Inbox
	max int // attempts a delivery gets in all: len(RetryDelays)+1
}

// notify is the inbox's OnChange: the page's rows change live.
func (s *inboxSource) notify(r inbox.Record) {
	if s != nil {
		s.Notify(s.record(r))
	}
}

func (s *inboxSource) record(r inbox.Record) inspector.Record {
	rec := inspector.Record{
		ID: r.ID, Event: r.Event, Action: r.Action, Header: r.Header, Payload: r.Payload,
		ReceivedAt: r.ReceivedAt, Status: r.Status, Seq: r.Seq,
		// The inbox stores verified deliveries only, and answered them 202.
		Verified: true, HTTPStatus: http.StatusAccepted, MaxAttempts: s.max,
	}
	for _, a := range r.Attempts {
		rec.Attempts = append(rec.Attempts, inspector.Attempt{Number: a.Number, Start: a.Start, Duration: a.Duration, Err: a.Err})
	}
	return rec
}

// sourceErr gives the inbox's errors the inspector's meaning (the page answers
// 404 and 409 for them).
func sourceErr(err error) error {
	switch {
	case errors.Is(err, inbox.ErrNotFound):
		return fmt.Errorf("%w: %w", inspector.ErrNotFound, err)
	case errors.Is(err, inbox.ErrNotDead):
		return fmt.Errorf("%w: %w", inspector.ErrNotDead, err)
	}
	return err
}

func (s *inboxSource) List(ctx context.Context, o inspector.ListOptions) ([]inspector.Record, error) {
	recs, err := s.in.List(ctx, inbox.ListOptions{Status: o.Status, Event: o.Event, Before: o.Before, Limit: o.Limit})
	out := make([]inspector.Record, len(recs))
	for i, r := range recs {
		out[i] = s.record(r)
	}
	return out, sourceErr(err)
}

func (s *inboxSource) Get(ctx context.Context, id string) (inspector.Record, error) {
	r, err := s.in.Get(ctx, id)
	if err != nil {
		return inspector.Record{}, sourceErr(err)
	}
	return s.record(r), nil
}

func (s *inboxSource) Retry(ctx context.Context, id string) error {
	return sourceErr(s.in.Retry(ctx, id))
}

func (s *inboxSource) Replay(ctx context.Context, id string) error {
	return sourceErr(s.in.Replay(ctx, id))
}

// attempts is how many attempts a delivery gets with these flags.
func (f *inboxFlags) attempts() int {
	o, err := f.options()
	if err != nil {
		return 0
	}
	if o.RetryDelays == nil {
		return len(inbox.DefaultRetryDelays) + 1
	}
	return len(o.RetryDelays) + 1
}
