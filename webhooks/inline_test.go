package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// TestInlineAnswersWhenHandlersReturn: in inline mode the answer waits for the
// handlers however long they take (no 202), and it is their result.
func TestInlineAnswersWhenHandlersReturn(t *testing.T) {
	tests := []struct {
		event  string
		status int
		body   string
	}{
		{"slow", http.StatusOK, "ok\n"},
		{"fail", http.StatusInternalServerError, msgHandlerFailed},
		{"panic", http.StatusInternalServerError, msgHandlerFailed},
		{"unprocessable", http.StatusUnprocessableEntity, "cannot process this"},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			// A timeout shorter than the wait below, as if one were set:
			// inline mode must not answer at it.
			f := newFixture(t, MiddlewareOptions{Inline: true}, func(m *Middleware) { m.timeout = 50 * time.Millisecond })
			type answer struct {
				status int
				body   string
			}
			got := make(chan answer, 1)
			go func() {
				res, body := f.do(t, req{header: hdr(HeaderEvent, tt.event)})
				got <- answer{res.StatusCode, body}
			}()
			if tt.event == "slow" {
				select {
				case a := <-got:
					t.Fatalf("answered %d %q while the handler ran", a.status, a.body)
				case <-time.After(300 * time.Millisecond):
				}
				close(f.release)
			}
			a := <-got
			if a.status != tt.status || !strings.Contains(a.body, tt.body) {
				t.Fatalf("answer %d %q, want %d containing %q", a.status, a.body, tt.status, tt.body)
			}
		})
	}
}

// TestInlineErrorHandlersRunBeforeTheAnswer: the error handlers told of a
// failed delivery, or of a forged one, have returned when the answer comes.
func TestInlineErrorHandlersRunBeforeTheAnswer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rq     req
		status int
	}{
		{"handler fails", req{header: hdr(HeaderEvent, "fail")}, http.StatusInternalServerError},
		{"wrong signature", req{signWith: "another-secret-0123456789"}, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(&logRecords{})})
			wh.OnAny(func(context.Context, emitter.Event) error { return errors.New("handler failed") })
			var told atomic.Int32
			wh.OnError(func(ctx context.Context, err *emitter.Error) {
				time.Sleep(100 * time.Millisecond) // an answer not waiting would come first
				told.Add(1)
			})
			srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Inline: true}))
			defer srv.Close()
			f := &fixture{wh: wh, srv: srv}
			res, _ := f.do(t, tt.rq)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if n := told.Load(); n != 1 {
				t.Fatalf("error handlers returned before the answer: %d, want 1", n)
			}
		})
	}
}

// TestInlineNothingStartsAfterTheAnswer: a handler that leaves a goroutine
// behind cannot start handlers after the answer: the dispatch under the
// delivery's context returns ErrAnswered and runs nothing, and that context is
// canceled with cause ErrAnswered.
func TestInlineNothingStartsAfterTheAnswer(t *testing.T) {
	logs := &logRecords{}
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(logs)})
	var ran atomic.Int32
	answered := make(chan struct{})
	type late struct{ receive, verify, cause error }
	lateErr := make(chan late, 1)
	wh.On("issues", func(ctx context.Context, e emitter.Event) error {
		ran.Add(1)
		if e.ID != "first" {
			return nil
		}
		go func() {
			<-answered
			var l late
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				l.cause = errors.New("the context was not canceled after the answer")
				lateErr <- l
				return
			}
			l.receive = wh.Receive(ctx, emitter.Event{ID: "late", Name: "issues", Payload: []byte(`{}`)})
			sig, _ := wh.Sign([]byte(`{}`))
			l.verify = wh.VerifyAndReceive(ctx, Delivery{ID: "late", Name: "issues", Payload: []byte(`{}`), Signature: sig})
			l.cause = context.Cause(ctx)
			lateErr <- l
		}()
		return nil
	})
	srv := httptest.NewServer(NewMiddleware(wh, MiddlewareOptions{Inline: true}))
	defer srv.Close()
	f := &fixture{wh: wh, srv: srv}
	res, _ := f.do(t, req{header: hdr(HeaderDelivery, "first")})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	close(answered)
	l := <-lateErr
	for _, err := range []error{l.receive, l.verify, l.cause} {
		if !errors.Is(err, ErrAnswered) {
			t.Fatalf("after the answer: %v, want ErrAnswered", err)
		}
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("handler runs: %d, want 1 (none after the answer)", n)
	}
	if !strings.Contains(logs.text(), "dispatch after the answer refused") {
		t.Fatalf("refusal not logged:\n%s", logs.text())
	}
	// The same calls with a context of no answered delivery still run.
	if err := wh.Receive(context.Background(), emitter.Event{ID: "x", Name: "issues", Payload: []byte(`{}`)}); err != nil || ran.Load() != 2 {
		t.Fatalf("Receive outside inline mode: %v, runs %d", err, ran.Load())
	}
}

type fakeInbox struct {
	workers bool
	stored  atomic.Int32
}

func (i *fakeInbox) Enqueue(context.Context, Delivery) (EnqueueResult, error) {
	i.stored.Add(1)
	return Enqueued, nil
}
func (i *fakeInbox) RunsWorkers() bool { return i.workers }

// TestInlineRefusedCombinations: NewMiddleware refuses the options under
// which an inline middleware would leave work running after its answer, and
// takes the others.
func TestInlineRefusedCombinations(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(&logRecords{})})
	for _, tt := range []struct {
		name  string
		opts  MiddlewareOptions
		panic string // "" when accepted
	}{
		{"timeout", MiddlewareOptions{Inline: true, Timeout: time.Second}, "positive Timeout"},
		{"inbox with workers", MiddlewareOptions{Inline: true, Inbox: &fakeInbox{workers: true}}, "runs workers"},
		{"inbox with workers and timeout", MiddlewareOptions{Inline: true, Inbox: &fakeInbox{workers: true}, Timeout: time.Second}, "runs workers"},
		{"no timeout", MiddlewareOptions{Inline: true, Timeout: -1}, ""},
		{"default timeout", MiddlewareOptions{Inline: true}, ""},
		{"inbox without workers", MiddlewareOptions{Inline: true, Inbox: &fakeInbox{}, Timeout: time.Second}, ""},
		{"timeout without inline", MiddlewareOptions{Timeout: time.Second, Inbox: &fakeInbox{workers: true}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			func() {
				defer func() {
					if v := recover(); v != nil {
						got = v.(string)
					}
				}()
				NewMiddleware(wh, tt.opts)
			}()
			if tt.panic == "" && got != "" || !strings.Contains(got, tt.panic) {
				t.Fatalf("panic %q, want one containing %q", got, tt.panic)
			}
		})
	}
}

// TestInlineInboxStoresBeforeTheAnswer: with an inbox, an inline middleware
// stores the delivery before answering 202, and runs no handler.
func TestInlineInboxStoresBeforeTheAnswer(t *testing.T) {
	ib := &fakeInbox{}
	f := newFixture(t, MiddlewareOptions{Inline: true, Inbox: ib})
	res, body := f.do(t, req{})
	if res.StatusCode != http.StatusAccepted || body != "queued\n" || ib.stored.Load() != 1 || f.ran.Load() != 0 {
		t.Fatalf("answer %d %q, stored %d, handler runs %d", res.StatusCode, body, ib.stored.Load(), f.ran.Load())
	}
}

// TestInlineHandlersSeeTheRequestsDeadline: in inline mode the handlers'
// context is the request's: a function platform's deadline reaches them.
func TestInlineHandlersSeeTheRequestsDeadline(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(&logRecords{})})
	deadlines := make(chan bool, 2)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		_, ok := ctx.Deadline()
		deadlines <- ok
		return nil
	})
	for _, inline := range []bool{true, false} {
		mw := NewMiddleware(wh, MiddlewareOptions{Inline: inline})
		body := `{"action":"opened"}`
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, DefaultPath, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(HeaderEvent, "issues")
		r.Header.Set(HeaderDelivery, "d-1")
		r.Header.Set(HeaderSignature, sign(t, secret, []byte(body)))
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, r)
		cancel()
		if rec.Code != http.StatusOK {
			t.Fatalf("inline %v: %d %s", inline, rec.Code, rec.Body)
		}
		// Without Inline the handlers may outlive the request, so they do
		// not get its deadline.
		if got := <-deadlines; got != inline {
			t.Fatalf("inline %v: the handler saw a deadline: %v", inline, got)
		}
	}
}
