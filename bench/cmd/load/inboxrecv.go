package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"forgehooks.dev/forgehooks/bench"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/webhooks"
)

// newInboxReceiver is the forgehooks middleware with a durable inbox in a
// fresh directory and a raw handler run by the inbox's workers: `serve
// --inbox` without its log lines, in this process so that -cpuprofile
// profiles it. The returned func closes the inbox and removes its directory.
func newInboxReceiver() (http.Handler, func(), error) {
	dir, err := os.MkdirTemp("", "forgehooks-load-inbox-")
	if err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	wh, err := webhooks.New(webhooks.Options{Secret: bench.Secret, Logger: quiet})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	in, err := inbox.Open(context.Background(), inbox.Options{Dir: filepath.Join(dir, "inbox"), Receiver: wh, Logger: quiet})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if err := in.Start(context.Background()); err != nil {
		in.Close(context.Background())
		os.RemoveAll(dir)
		return nil, nil, err
	}
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{Path: "/", Inbox: in, Logger: quiet})
	return mw, func() {
		in.Close(context.Background())
		os.RemoveAll(dir)
	}, nil
}
