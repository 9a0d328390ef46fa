package inbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/webhooks"
)

// TestInlineMiddlewareAndWorkers: an inline middleware takes an inbox that
// runs no worker in this process (it stores the delivery before its 202) and
// refuses, at construction, one whose workers Start has run.
func TestInlineMiddlewareAndWorkers(t *testing.T) {
	wh := newWebhooks(t)
	in, err := Open(context.Background(), Options{Dir: t.TempDir(), Receiver: wh, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if in.RunsWorkers() {
		t.Fatal("RunsWorkers before Start")
	}
	srv := httptest.NewServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inline: true, Inbox: in, Logger: quiet(t)}))
	defer srv.Close()
	if code, body, err := post(t, srv.Client(), srv.URL, "issues", "inline-1", payload("inline-1"), testSecret); err != nil || code != http.StatusAccepted {
		t.Fatalf("inline with an inbox without workers: %d %q %v", code, body, err)
	}
	if held, err := in.Holds(context.Background(), "inline-1"); err != nil || !held {
		t.Fatalf("stored before the answer: %v %v", held, err)
	}
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !in.RunsWorkers() {
		t.Fatal("RunsWorkers after Start: false")
	}
	defer func() {
		v := recover()
		if s, _ := v.(string); !strings.Contains(s, "runs workers") {
			t.Fatalf("inline with a started inbox: %v, want a panic", v)
		}
	}()
	webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Inline: true, Inbox: in})
}
