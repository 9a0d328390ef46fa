package webhooks_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

func TestAcceptPatterns(t *testing.T) {
	a, err := webhooks.ParseAccept([]string{"issues", "pull_request.opened", "check_*", " label.* "})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		event, action string
		want          bool
	}{
		{"issues", "", true}, {"issues", "opened", true},
		{"pull_request", "opened", true}, {"pull_request", "closed", false}, {"pull_request", "", false},
		{"check_run", "completed", true}, {"check_suite", "", true},
		{"label", "created", true}, {"label", "", true},
		{"push", "", false}, {"issue", "", false}, {"issues_x", "", false},
	} {
		if got := a.Accepts(tc.event, tc.action); got != tc.want {
			t.Errorf("%s.%s: %v, want %v", tc.event, tc.action, got, tc.want)
		}
	}
	all, _ := webhooks.ParseAccept([]string{"*"})
	if !all.Accepts("anything", "at_all") {
		t.Error("* refused a delivery")
	}
	for _, bad := range [][]string{nil, {""}, {"a.b.c"}, {"["}, {"a/b"}} {
		if _, err := webhooks.ParseAccept(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// memInbox stores deliveries in memory.
type memInbox struct{ stored atomic.Int32 }

func (m *memInbox) Enqueue(context.Context, webhooks.Delivery) (webhooks.EnqueueResult, error) {
	m.stored.Add(1)
	return webhooks.Enqueued, nil
}

// TestAcceptMiddleware: a verified delivery that Accept or AcceptHandled
// refuses is 200 "ignored", neither run nor stored, and so reported; a
// forged one is still 400.
func TestAcceptMiddleware(t *testing.T) {
	const secret = "accept-test-secret-0123456789"
	wh, _ := webhooks.New(webhooks.Options{Secret: secret})
	var ran atomic.Int32
	wh.On("issues.opened", func(context.Context, emitter.Event) error { ran.Add(1); return nil })
	accept, _ := webhooks.ParseAccept([]string{"issues", "pull_request"})
	var ignored atomic.Int32
	in := &memInbox{}
	for _, tc := range []struct {
		name string
		opts webhooks.MiddlewareOptions
	}{
		{"Accept", webhooks.MiddlewareOptions{Accept: accept}},
		{"AcceptHandled with an inbox", webhooks.MiddlewareOptions{AcceptHandled: true, Inbox: in}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.OnResult = func(r webhooks.Result) {
				if r.Ignored {
					ignored.Add(1)
				}
			}
			mw := webhooks.NewMiddleware(wh, tc.opts)
			send := func(event, body, sig string) (int, string) {
				req := httptest.NewRequest("POST", webhooks.DefaultPath, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(webhooks.HeaderEvent, event)
				req.Header.Set(webhooks.HeaderDelivery, "1")
				if sig == "" {
					sig, _ = signing.Sign(secret, []byte(body))
				}
				req.Header.Set(webhooks.HeaderSignature, sig)
				rec := httptest.NewRecorder()
				mw.ServeHTTP(rec, req)
				return rec.Code, rec.Body.String()
			}
			ran.Store(0)
			ignored.Store(0)
			in.stored.Store(0)
			if code, body := send("push", `{"ref":"x"}`, ""); code != 200 || body != "ignored\n" {
				t.Errorf("push: %d %q", code, body)
			}
			if code, _ := send("pull_request", `{"action":"labeled"}`, ""); tc.opts.AcceptHandled && code != 200 {
				t.Errorf("pull_request.labeled, no handler: %d", code)
			}
			if code, _ := send("push", `{"ref":"x"}`, "sha256=00"); code != 400 {
				t.Errorf("forged push: %d, want 400", code)
			}
			if code, _ := send("issues", `{"action":"opened"}`, ""); code != 200 && code != 202 {
				t.Errorf("issues: %d", code)
			}
			if tc.opts.Inbox == nil && ran.Load() != 1 || tc.opts.Inbox != nil && in.stored.Load() != 1 {
				t.Errorf("ran %d, stored %d; want the issues delivery only", ran.Load(), in.stored.Load())
			}
			if n := ignored.Load(); n != 1 && !tc.opts.AcceptHandled || tc.opts.AcceptHandled && n != 2 {
				t.Errorf("%d reported ignored", n)
			}
		})
	}
}
