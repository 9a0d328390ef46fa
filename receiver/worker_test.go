package receiver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestIngestOnlyNeedsACluster: an ingest-only receiver's deliveries must be
// reachable by workers elsewhere, which an embedded inbox's directory is not.
func TestIngestOnlyNeedsACluster(t *testing.T) {
	t.Parallel()
	for _, o := range []receiver.Options{
		{IngestOnly: true},
		{IngestOnly: true, Inbox: &inbox.Options{Dir: t.TempDir()}},
	} {
		o.Webhooks = newWebhooks(t)
		_, err := receiver.New(context.Background(), o)
		var oe *receiver.OptionError
		if !errors.As(err, &oe) || oe.Field != "IngestOnly" {
			t.Errorf("New(%+v): %v, want an OptionError for IngestOnly", o, err)
		}
	}
}

func TestRunWorkerChecksOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts  receiver.WorkerOptions
		field string
	}{
		{receiver.WorkerOptions{}, "Receiver"},
		{receiver.WorkerOptions{Forward: "notaurl"}, "Forward"},
		{receiver.WorkerOptions{Forward: "http://127.0.0.1:1/x", MetricsAddr: "9090"}, "MetricsAddr"},
	} {
		err := receiver.RunWorker(context.Background(), tc.opts)
		var oe *receiver.OptionError
		if !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("RunWorker(%+v): %v, want an OptionError for %s", tc.opts, err, tc.field)
		}
	}
}

// TestRunWorker: deliveries stored by an inbox that ran no worker are run by
// RunWorker (handlers, retry of a failure), its metrics are named for the
// worker's role, and cancelling its context drains and returns.
func TestRunWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wh := newWebhooks(t)
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		id := fmt.Sprintf("w-%d", i)
		if _, err := in.Enqueue(context.Background(), webhooks.Delivery{ID: id, Name: "issues", Payload: []byte(fmt.Sprintf(`{"action":"opened","n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	in.Close(context.Background()) // the ingest is gone; the directory is free

	var mu sync.Mutex
	runs := map[string]int{}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		runs[e.ID]++
		if e.ID == "w-0" && runs[e.ID] == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	metricsAddr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- receiver.RunWorker(ctx, receiver.WorkerOptions{
			Inbox:    inbox.Options{Dir: dir, RetryDelays: []time.Duration{10 * time.Millisecond}},
			Receiver: wh, Metrics: &metrics.Options{}, MetricsAddr: "127.0.0.1:0",
			OnListen: func(_, addr string) { metricsAddr <- addr },
			Logger:   slog.New(slog.DiscardHandler),
		})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n, retried := len(runs), runs["w-0"]
		mu.Unlock()
		if n == 5 && retried == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs: %v", runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := http.Get("http://" + <-metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), receiver.WorkerNamespace+"_inbox_attempts_total{") {
		t.Fatalf("metrics do not name the worker's role:\n%s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWorker: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RunWorker did not return after its context ended")
	}
}
