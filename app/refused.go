package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// RefusedError is the error of a request the forge refused in a way that no
// retry cures: it says the installation does not exist (404 on its token
// request: the app was uninstalled), or "Resource not accessible by
// integration" (403: the app lacks the permission, or the repository is not
// among the installation's). The installation's owner has to change
// something first.
//
// It is final: its Permanent method returns true, the mark
// webhooks.IsPermanent recognises, so a handler that returns it (wrapped or
// not) has its delivery moved to an inbox's dead letters without a retry.
// Other refusals (401, a rate limit, a 5xx) are not RefusedErrors.
type RefusedError struct {
	Method, Path string // the request (the path without its query)
	Installation int64  // 0 for a request as the app
	StatusCode   int
	// Message is the forge's message, clipped.
	Message string
	// Hint says what the refusal usually means.
	Hint string
}

// Error names the request, the answer and the forge's message.
func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("app: %s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Installation != 0 {
		msg = fmt.Sprintf("app: installation %d: %s %s: %d %s", e.Installation, e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Permanent returns true: see webhooks.Permanent.
func (e *RefusedError) Permanent() bool { return true }

// notAccessible is the forge's message for a request an installation's
// permissions or repositories do not cover.
var notAccessible = []byte("resource not accessible by integration")

// notAccessibleHint is RefusedError.Hint for notAccessible.
const notAccessibleHint = "the app lacks the permission, or the repository is not among the installation's"

// refusal reads a 403 answer's message and returns the RefusedError it
// stands for, or nil when it is another 403. The answer's body stays whole
// for the caller when it returns nil.
func refusal(req *http.Request, res *http.Response, installation int64) *RefusedError {
	if res.StatusCode != http.StatusForbidden || res.Body == nil || res.Body == http.NoBody {
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(res.Body, maxPeek))
	res.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(head), res.Body), Closer: res.Body}
	if err != nil || !bytes.Contains(bytes.ToLower(head), notAccessible) {
		return nil
	}
	return &RefusedError{Method: req.Method, Path: req.URL.Path, Installation: installation,
		StatusCode: res.StatusCode, Message: errorMessage(head), Hint: notAccessibleHint}
}
