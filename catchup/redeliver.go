package catchup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// ErrNotInLog is wrapped by the error of [RedeliverGUID] when the delivery log
// has no attempt with the guid.
var ErrNotInLog = errors.New("no attempt with this delivery id in the forge's delivery log")

// RedeliverGUID asks the forge to redeliver one delivery, by its guid (the
// X-Forge-Delivery header): it reads opts.Hook's delivery log newest first,
// back LogRetention at most (and MaxPages), until the guid's latest attempt,
// and requests its redelivery (POST …/deliveries/{id}/attempts), whatever
// the attempt's status: it is an explicit request, as from an inspector's
// button. It uses opts' APIURL, Hook, Credentials, HTTPClient, Logger, Clock,
// MaxTries, MaxWait, MaxPages and UserAgent; it neither reads nor saves
// Checkpoints and asks no Holder. It returns the attempt redelivered; an
// error wraps ErrNotInLog when the log has none, or an *APIError when the
// forge refuses.
func RedeliverGUID(ctx context.Context, opts Options, guid string) (Attempt, error) {
	if guid == "" {
		return Attempt{}, errors.New("catchup: redeliver: no delivery id")
	}
	r, err := newRun(opts)
	if err != nil {
		return Attempt{}, err
	}
	from := r.clock.Now().Add(-LogRetention)
	w, _, err := r.list(ctx, from, func(a Attempt) bool { return a.GUID == guid })
	if err != nil {
		return Attempt{}, fmt.Errorf("catchup: %s: reading the delivery log: %w", opts.Hook, err)
	}
	// The log is newest first and ids grow, so the guid's first attempt read
	// is its latest; list stopped there.
	a := w.last
	if a.GUID != guid {
		return Attempt{}, fmt.Errorf("catchup: %s: %s: %w", opts.Hook, guid, ErrNotInLog)
	}
	if err := r.redeliver(ctx, a.ID); err != nil {
		return a, fmt.Errorf("catchup: %s: redelivering %s (attempt %d): %w", opts.Hook, guid, a.ID, err)
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "catchup: redelivery requested", slog.String("hook", opts.Hook.String()), slog.String("guid", guid), slog.String("event", a.Event), slog.Int64("attempt", a.ID))
	return a, nil
}
