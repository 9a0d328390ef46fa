package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"forgehooks.dev/forgehooks/internal/proxy"
)

func cmdProxy(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "proxy", "forgehooks proxy [flags]", `
Serve webhook channels (smee-compatible): GET /new redirects to a new channel
URL; a delivery POSTed to a channel URL goes, as a Server-Sent Event, to every
client subscribed to it (forgehooks relay, smee-client). Channel URLs come from
/new (any other name is unknown unless --allow-named-channels); /new?token=1
makes a channel that needs its read token to subscribe. Each channel keeps its
last deliveries so that a client that comes back with a Last-Event-ID this
proxy gave it gets what it missed (any other id replays nothing); with
--journal they are kept on disk too, with the key that makes channel URLs, so
that both survive a restart of the proxy. Memory is bounded across channels:
--max-buffered-bytes for the replay buffers, --max-pending-bytes for deliveries
being received (503 with Retry-After past it), --max-journal-bytes on disk.`)
	addr := fs.String("addr", "127.0.0.1:3001", "address to listen on")
	journal := fs.String("journal", "", "directory to keep the replay buffers in, so that they survive a restart (default: memory only)")
	replayEvents := fs.Int("replay-events", proxy.DefaultReplayEvents, "deliveries kept per channel for replay")
	replayBytes := fs.Int64("replay-bytes", proxy.DefaultReplayBytes, "bytes of messages kept per channel for replay")
	replayAge := fs.Duration("replay-age", proxy.DefaultReplayAge, "how long a delivery is kept for replay")
	keepAlive := fs.Duration("keep-alive", proxy.DefaultKeepAlive, "interval of keep-alive comments on idle streams")
	maxBody := fs.Int64("max-body-bytes", proxy.DefaultMaxBodyBytes, "largest delivery accepted (413 above)")
	maxChannels := fs.Int("max-channels", proxy.DefaultMaxChannels, "most channels held at once; past it a new channel replaces the one idle longest without subscribers")
	maxBuffered := fs.Int64("max-buffered-bytes", proxy.DefaultMaxBufferedBytes, "bytes of messages kept for replay across all channels; past it the oldest go")
	maxPending := fs.Int64("max-pending-bytes", proxy.DefaultMaxPendingBytes, "memory for deliveries being received at once (each charged for what it holds; 5 times its size once read; one channel at most half); past it 503 with Retry-After")
	maxJournal := fs.Int64("max-journal-bytes", 0, "bytes of all journal files together, at least 1⅛ × --max-buffered-bytes; past it the journals are compacted (default: twice --max-buffered-bytes, at least 256 MiB)")
	allowNamed := fs.Bool("allow-named-channels", false, "accept any channel name (such as /my-channel), not only those /new gives out")
	shutdown := fs.Duration("shutdown-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long to let requests finish")
	jsonLog := fs.Bool("json", false, "log JSON lines instead of text")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if err := checkListenAddr(*addr); err != nil {
		return fs.usageError("bad --addr: %v", err)
	}
	if *maxJournal > 0 && *maxJournal < *maxBuffered+*maxBuffered/8 {
		return fs.usageError("--max-journal-bytes %d is too small for --max-buffered-bytes %d: the journals need at least what the buffers hold and an eighth, room to append between compactions", *maxJournal, *maxBuffered)
	}
	log := fs.logger(*jsonLog)
	opts := proxy.Options{
		MaxBodyBytes:       *maxBody,
		ReplayEvents:       *replayEvents,
		ReplayBytes:        *replayBytes,
		ReplayAge:          *replayAge,
		KeepAlive:          *keepAlive,
		MaxChannels:        *maxChannels,
		MaxBufferedBytes:   *maxBuffered,
		MaxPendingBytes:    *maxPending,
		MaxJournalBytes:    *maxJournal,
		AllowNamedChannels: *allowNamed,
		JournalDir:         *journal,
		Logger:             log,
	}
	if c.setMemoryLimit != nil {
		c.setMemoryLimit(proxy.MemoryLimit(opts))
	}
	p, err := proxy.New(opts)
	if err != nil {
		return fs.fail("%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		p.Close()
		return fs.fail("cannot listen on %s: %v (is another proxy running there? choose another with --addr)", *addr, err)
	}
	// No server-wide read or write timeout: streams are long-lived, and the
	// proxy sets per-request deadlines itself.
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10, // a delivery's headers are a few hundred bytes
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	base := "http://" + ln.Addr().String()
	log.Info("forgehooks proxy: serving channels", "url", base, "new_channel", base+"/new", "journal", *journal)
	if c.listening != nil {
		c.listening(ln.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		p.Close()
		return fs.fail("%v", err)
	case <-ctx.Done():
	}
	log.Info("forgehooks proxy: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	if err := proxy.Shutdown(sctx, srv, p); err != nil {
		return fs.fail("shutdown: %v", err)
	}
	return exitOK
}
