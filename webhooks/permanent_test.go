package webhooks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

// marked is an error of a package that does not import webhooks, marking
// itself final with a Permanent method.
type marked struct{ final bool }

func (m marked) Error() string   { return "marked" }
func (m marked) Permanent() bool { return m.final }

func TestIsPermanent(t *testing.T) {
	cause := errors.New("no")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", cause, false},
		{"marked", Permanent(cause), true},
		{"wrapped mark", fmt.Errorf("posting a comment: %w", Permanent(cause)), true},
		{"method true", fmt.Errorf("x: %w", marked{true}), true},
		{"method false", marked{false}, false},
		{"aggregate, every one final", &emitter.Error{Errors: []error{Permanent(cause), marked{true}}}, true},
		{"aggregate, one may heal", &emitter.Error{Errors: []error{Permanent(cause), cause}}, false},
		{"aggregate, empty", &emitter.Error{}, false},
		{"join, every one final", errors.Join(Permanent(cause), Permanent(fs.ErrNotExist)), true},
		{"join, one may heal", errors.Join(Permanent(cause), fs.ErrNotExist), false},
		{"a panic", &emitter.PanicError{Value: "boom"}, false},
		{"a panic with a final error", &emitter.PanicError{Value: Permanent(cause)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPermanent(tt.err); got != tt.want {
				t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
}

// TestPermanentKeepsItsCause: the mark changes neither the message nor what
// errors.Is and errors.As find, also through the aggregate error Receive
// returns.
func TestPermanentKeepsItsCause(t *testing.T) {
	t.Parallel()
	wh := mustNew(t, Options{Secret: secret})
	wh.On("issues", func(context.Context, emitter.Event) error {
		return Permanent(fmt.Errorf("labeling: %w", fs.ErrPermission))
	})
	err := wh.Receive(context.Background(), emitter.Event{ID: "1", Name: "issues", Payload: []byte(`{"action":"opened"}`)})
	if err == nil {
		t.Fatal("no error")
	}
	if err.Error() != "labeling: permission denied" {
		t.Errorf("message %q", err)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("errors.Is does not see the cause")
	}
	var ee *emitter.Error
	if !errors.As(err, &ee) || len(ee.Errors) != 1 {
		t.Fatalf("errors.As: not the aggregate (%T)", err)
	}
	var pe interface{ Permanent() bool }
	if !errors.As(err, &pe) || !pe.Permanent() {
		t.Error("errors.As does not find the mark")
	}
	if !IsPermanent(err) {
		t.Error("IsPermanent of the aggregate is false")
	}
}

// TestPermanentAnswersAsAFailure: a final error is a failed handler to the
// middleware, inline or not: 500, as any other.
func TestPermanentAnswersAsAFailure(t *testing.T) {
	t.Parallel()
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			t.Parallel()
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
			wh.On("issues", func(context.Context, emitter.Event) error { return Permanent(errors.New("no")) })
			srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Inline: inline}))
			defer srv.Close()
			status, body := post(t, srv.Client(), srv.URL+DefaultPath, "issues", "d1", []byte(`{"action":"opened"}`))
			if status != http.StatusInternalServerError || !strings.Contains(body, msgHandlerFailed) {
				t.Fatalf("answer %d %q, want 500 %q", status, body, msgHandlerFailed)
			}
		})
	}
}
