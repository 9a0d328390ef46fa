package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/clip"
)

// Messages of the answers; the README's status table quotes them.
const (
	msgUnsupportedType  = `Unsupported "Content-Type" header value. Must be "application/json"`
	msgMismatch         = "signature does not match event payload and secret"
	msgShuttingDown     = "Shutting down: not accepting deliveries"
	msgBusy             = "Too many deliveries in progress: try again later"
	msgNoMessage        = "handler failed without a message"
	msgUnverifiedBudget = "Too many request bodies being received: try again later"
	msgHandlerFailed    = "handler failed; the receiver's log has the details"
	msgSlowBody         = "Request body arriving too slowly"
	msgBadID            = "X-Forge-Delivery must be at most 128 printable ASCII characters"
)

// answer writes the response for Receive's result.
func (m *Middleware) answer(rw http.ResponseWriter, r *http.Request, d Delivery, err error) {
	if err == nil {
		writeText(rw, http.StatusOK, "ok\n")
		return
	}
	m.answerFailure(rw, r, d, err)
}

// answerFailure writes the response for Receive's error. Apart from answer,
// so that the target of errors.As is made only for a failure.
func (m *Middleware) answerFailure(rw http.ResponseWriter, r *http.Request, d Delivery, err error) {
	var herr *emitter.Error
	switch {
	case errors.Is(err, emitter.ErrClosed):
		m.unavailable(rw, r, msgShuttingDown, "closed", "delivery", clip.String(d.ID))
	case errors.As(err, &herr) && len(herr.Errors) > 0:
		first := herr.Errors[0]
		code := statusOf(first)
		m.logger.Error("webhooks: handlers failed", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "status", code, "errors", len(herr.Errors), "error", err)
		writeJSONError(rw, code, m.errorText(first))
	case errors.Is(err, emitter.ErrInvalidPayload), errors.Is(err, emitter.ErrMissingPayload), errors.Is(err, emitter.ErrMissingName):
		m.reject(rw, r, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "emitter: "), slog.LevelWarn, "invalid payload", "delivery", clip.String(d.ID), "event", clip.String(d.Name))
	default:
		m.logger.Error("webhooks: delivery failed", "delivery", clip.String(d.ID), "event", clip.String(d.Name), "error", err)
		writeJSONError(rw, http.StatusInternalServerError, m.errorText(err))
	}
}

// errorText is the message answered for a failed handler's error: its own
// when the sender is meant to see it (ExposeHandlerErrors, or a status given
// with WithStatus), a generic one otherwise.
func (m *Middleware) errorText(err error) string {
	var s interface{ HTTPStatus() int }
	if !m.exposeErrs && !errors.As(err, &s) {
		return msgHandlerFailed
	}
	if msg := err.Error(); msg != "" {
		return msg
	}
	return msgNoMessage
}

// statusOf is the HTTP status for a handler's error: the HTTPStatus() of the
// first error in its chain that has one, when that is a 4xx or 5xx code, and
// 500 otherwise.
func statusOf(err error) int {
	var s interface{ HTTPStatus() int }
	if errors.As(err, &s) {
		if code := s.HTTPStatus(); code >= 400 && code <= 599 {
			return code
		}
	}
	return http.StatusInternalServerError
}

// WithStatus returns err with an HTTP status: when a handler's error (the first
// one, if several handlers fail) is or wraps it, the middleware answers with
// code instead of 500. code must be a 4xx or 5xx status; others are ignored. The
// result's message is err's, and errors.Is and errors.As see err through it.
// WithStatus(code, nil) is nil.
//
// Any error type with a method HTTPStatus() int works the same way.
func WithStatus(code int, err error) error {
	if err == nil {
		return nil
	}
	return &statusError{code: code, err: err}
}

type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string   { return e.err.Error() }
func (e *statusError) Unwrap() error   { return e.err }
func (e *statusError) HTTPStatus() int { return e.code }

func (m *Middleware) tooLarge(rw http.ResponseWriter, r *http.Request, d Delivery) {
	m.reject(rw, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("Payload too large: the limit is %d bytes", m.max), slog.LevelWarn, "body too large", "delivery", clip.String(d.ID), "content_length", r.ContentLength)
}

// unavailable answers 503 with Retry-After: the delivery was not dispatched,
// and may be sent again later.
func (m *Middleware) unavailable(rw http.ResponseWriter, r *http.Request, msg, why string, attrs ...any) {
	rw.Header().Set("Retry-After", strconv.Itoa(RetryAfter))
	m.reject(rw, r, http.StatusServiceUnavailable, msg, slog.LevelWarn, why, attrs...)
}

// notFound answers a request for another path than the middleware's, and
// warns, naming the configured path: a router that sends deliveries here
// under another path gets 404 for every one of them.
func (m *Middleware) notFound(rw http.ResponseWriter, r *http.Request) {
	configured := m.path
	if configured == "" {
		configured = "/"
	}
	m.reject(rw, r, http.StatusNotFound, "Unknown route: "+r.Method+" "+requestURI(r), slog.LevelWarn, "path is not MiddlewareOptions.Path (mounted under a router? use Middleware.AnyPath)", "configured_path", configured)
}

// reject logs why a request is refused and answers it with a JSON error.
func (m *Middleware) reject(rw http.ResponseWriter, r *http.Request, code int, msg string, level slog.Level, why string, attrs ...any) {
	if sw, ok := rw.(*statusWriter); ok && sw.oc.reason == "" {
		sw.oc.reason = msg
	}
	attrs = append([]any{"status", code, "method", r.Method, "path", clip.String(requestURI(r)), "remote", r.RemoteAddr}, attrs...)
	m.logger.Log(r.Context(), level, "webhooks: rejected request: "+why, attrs...)
	writeJSONError(rw, code, msg)
}

func requestURI(r *http.Request) string {
	if r.RequestURI != "" {
		return r.RequestURI
	}
	if r.URL != nil {
		return r.URL.RequestURI()
	}
	return ""
}

// isJSON reports whether a Content-Type value is application/json, in any case,
// with or without parameters.
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true // what the forge sends; ParseMediaType allocates a map
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json" // ParseMediaType lower-cases it
}

func writeJSONError(rw http.ResponseWriter, code int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(code)
	rw.Write(body)
}

func writeText(rw http.ResponseWriter, code int, text string) {
	// Both values in one allocation, where two Header.Set calls make two; each
	// slice's capacity ends at its value, so that an Add to one cannot
	// write over the other.
	v := []string{"text/plain; charset=utf-8", strconv.Itoa(len(text))}
	h := rw.Header()
	h["Content-Type"], h["Content-Length"] = v[0:1:1], v[1:2:2]
	rw.WriteHeader(code)
	io.WriteString(rw, text)
}
