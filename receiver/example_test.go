package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/webhooks"
)

// A program that serves deliveries with an embedded inbox, the inspector page
// over it and /metrics, mounted on its own router, and drains on cancel.
func Example() {
	dir, _ := os.MkdirTemp("", "receiver-example")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	titles := make(chan string, 1)
	wh, _ := webhooks.New(webhooks.Options{Secret: "example-secret-0123456789"})
	payloads.OnIssuesOpenedEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.IssuesOpenedEvent]) error {
		titles <- e.Payload.Issue.Title
		cancel() // the example is done: Run drains, and waits for this handler
		return nil
	})
	r, err := receiver.New(ctx, receiver.Options{Webhooks: wh, Inbox: &inbox.Options{Dir: dir},
		Inspector: &inspector.Options{}, Metrics: &metrics.Options{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux() // the program's own router
	mux.Handle(webhooks.DefaultPath, r.Handler())
	mux.Handle("/inspector/", http.StripPrefix("/inspector", r.Inspector()))
	mux.Handle("GET /metrics", r.Metrics())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	done := make(chan error)
	go func() { done <- r.Run(ctx) }() // catch-up when configured; drains on cancel

	body := []byte(`{"action":"opened","issue":{"title":"It works"}}`)
	sig, _ := wh.Sign(body)
	req, _ := http.NewRequest("POST", srv.URL+webhooks.DefaultPath, bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "X-Forge-Event": {"issues"}, "X-Forge-Delivery": {"d-1"}, "X-Hub-Signature-256": {sig}}
	res, _ := http.DefaultClient.Do(req)
	fmt.Println(res.Status, "then handled:", <-titles)
	fmt.Println("drained:", <-done)
	// Output:
	// 202 Accepted then handled: It works
	// drained: <nil>
}
