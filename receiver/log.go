package receiver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/deliverylog"
	"forgehooks.dev/forgehooks/webhooks"
)

// logRequests serves the middleware and logs one line per request when it is
// answered: the delivery and the outcome. A 5xx answer's line is written by
// logResult instead, which has the error's cause. With an inbox, 202 means
// stored and 200 a duplicate. A stored delivery's line is at debug level
// when this process runs the delivery: its run logs the delivery's line at
// info (attemptLine), and one line a delivery is cheaper than two. The
// ingest alone (IngestOnly) runs nothing and logs it at info.
// With anyPath it takes every request as the middleware's AnyPath does.
func (r *Receiver) logRequests(maxInFlight int, anyPath bool) http.Handler {
	stored := r.in != nil
	storedLevel := slog.LevelInfo
	if stored && !r.opts.IngestOnly {
		storedLevel = slog.LevelDebug
	}
	log := r.log
	mw := r.mw
	var every http.Handler
	if anyPath {
		every = mw.AnyPath()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, info := deliverylog.With(req.Context())
		req = req.WithContext(ctx)
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		if every != nil {
			every.ServeHTTP(rec, req)
		} else if !mw.Handle(rec, req) {
			mw.ServeHTTP(rec, req)
			log.Info("not the webhook path", "method", clip.String(req.Method), "path", clip.String(req.URL.Path), "status", rec.status)
			return
		}
		if rec.status >= 500 {
			return // logResult
		}
		if stored && rec.status == http.StatusAccepted && !info.Ignored() && !log.Enabled(ctx, storedLevel) {
			return // nothing to build for a line not written
		}
		action, repository, sender := info.Fields()
		name := clip.String(req.Header.Get(webhooks.HeaderEvent)) // unverified: any size
		if action != "" {
			name += "." + action
		}
		attrs := []any{"id", clip.String(req.Header.Get(webhooks.HeaderDelivery)), "event", name}
		if tenant := info.Tenant(); tenant != "" {
			attrs = append(attrs, "tenant", tenant)
		}
		if !stored {
			// With an inbox the handlers run later: the line of each attempt
			// names the repository and sender.
			attrs = append(attrs, "repository", repository, "sender", sender)
		}
		attrs = append(attrs, "status", rec.status, "duration", time.Since(start).Round(time.Microsecond))
		if !stored && rec.status == http.StatusAccepted {
			// Handlers that outlive their answer hold a place until they return;
			// the count shows hanging handlers before deliveries are refused.
			attrs = append(attrs, "in_flight", mw.InFlight(), "max_in_flight", maxInFlight)
		}
		switch {
		case info.Ignored():
			log.Info("delivery ignored: no filter accepts it", attrs...)
		case stored && rec.status == http.StatusAccepted:
			log.Log(ctx, storedLevel, "delivery stored", attrs...)
		case stored && rec.status == http.StatusOK:
			log.Info("duplicate delivery", attrs...)
		case rec.status == http.StatusAccepted && maxInFlight > 0 && 2*mw.InFlight() >= maxInFlight:
			log.Warn("delivery accepted; handlers still running; half the in-flight places are taken", attrs...)
		case rec.status == http.StatusAccepted:
			log.Info("delivery accepted; handlers still running", attrs...)
		case rec.status < 300:
			log.Info("delivery ok", attrs...)
		default:
			log.Warn("delivery rejected", append(attrs, "reason", clip.String(rec.reason()))...)
		}
	})
}

// logResult logs what logRequests leaves out: a 5xx answer, with its error
// (a handler's, the store's), and the handlers of a 202 that failed after
// the answer. One line per request: each run of the handlers without an
// inbox (with one, the inbox logs each attempt).
func (r *Receiver) logResult(res webhooks.Result) {
	if res.Err == nil || res.Status < 500 && !(res.Status == http.StatusAccepted && r.in == nil) {
		return
	}
	name := clip.String(res.Name)
	if res.Action != "" {
		name += "." + clip.String(res.Action)
	}
	attrs := []any{"id", clip.String(res.ID), "event", name}
	if res.Tenant != "" {
		attrs = append(attrs, "tenant", res.Tenant)
	}
	if res.Payload != nil {
		repository, sender := deliverylog.Find(res.Payload)
		attrs = append(attrs, "repository", repository, "sender", sender)
	}
	attrs = append(attrs, "status", res.Status, "duration", res.Duration.Round(time.Microsecond), "error", res.Err.Error())
	if res.Status == http.StatusAccepted {
		r.log.Error("delivery failed after its answer", attrs...)
		return
	}
	r.log.Error("delivery failed", attrs...)
}

// attemptLine logs a stored delivery's handled attempt (the inbox logs the
// failed ones, with their error, once each).
func (r *Receiver) attemptLine(rec delivery.Record) { attemptLine(r.log, rec) }

func attemptLine(log *slog.Logger, rec delivery.Record) {
	if rec.Status != delivery.StatusHandled || len(rec.Attempts) == 0 {
		return
	}
	a := rec.Attempts[len(rec.Attempts)-1]
	attrs := []any{"id", rec.ID}
	if rec.Tenant != "" {
		attrs = append(attrs, "tenant", rec.Tenant)
	}
	log.Info("delivery handled", append(attrs, "event", rec.PayloadName(), "repository", rec.Repository, "sender", rec.Sender,
		"status", string(rec.Status), "attempt", a.Number, "duration", a.Duration.Round(time.Microsecond))...)
}

// recorder keeps the status and the start of an error answer's body. It
// neither flushes nor unwraps, on purpose: the middleware then runs the
// handlers on another goroutine and returns with its 202 at the timeout, so
// that the delivery's line is written when it is answered, not when its
// handlers end (see webhooks.Middleware).
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status >= 300 && r.body.Len() < 1024 {
		r.body.Write(p[:min(len(p), 1024-r.body.Len())])
	}
	return r.ResponseWriter.Write(p)
}

// SetReadDeadline lets the middleware hold a body to its minimum rate
// (http.ResponseController finds it here, as recorder does not unwrap).
func (r *recorder) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(r.ResponseWriter).SetReadDeadline(t)
}

// reason is the error message of a JSON error answer, or its text.
func (r *recorder) reason() string {
	var e struct{ Error string }
	if json.Unmarshal(r.body.Bytes(), &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(r.body.String())
}
