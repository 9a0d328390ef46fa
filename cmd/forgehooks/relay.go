package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/relay"
	"forgehooks.dev/forgehooks/internal/sse"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

func cmdRelay(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "relay", "forgehooks relay --source URL (--target URL | --secret S) [flags]", `
Receive deliveries from a webhook channel (a smee-style proxy, such as
'forgehooks proxy'): open its event stream and, for each delivery, either
verify and dispatch it in-process to a logging handler (--secret, or
$FORGE_WEBHOOK_SECRET), or re-POST it to --target with its original headers and
exact body bytes. The stream is reopened when it drops, with Last-Event-ID, so a
proxy that keeps a replay buffer sends what was missed. Ctrl-C stops it.

The body is taken from the message's bodyB (exact bytes), else rawBody, else
body as it stands in the message. A channel event may be at most
--max-event-bytes long: 96 MiB by default, room for a 25 MiB delivery (the
forge's limit) carried twice, as JSON and as base64 (33.4 MiB).`)
	source := fs.String("source", "", "channel URL, such as http://127.0.0.1:3001/CHANNEL (required)")
	target := fs.String("target", "", "re-POST each delivery here, such as http://127.0.0.1:3000"+webhooks.DefaultPath)
	secretF := fs.secretFlag()
	sha1 := fs.Bool("sha1", false, "also accept the old X-Hub-Signature (HMAC-SHA1) header when X-Hub-Signature-256 is absent")
	lastID := fs.String("last-event-id", "", "resume after this event id (sent as Last-Event-ID)")
	maxEvent := fs.Int("max-event-bytes", sse.DefaultMaxEventBytes, "largest channel event read; larger ones are skipped")
	maxBackoff := fs.Duration("max-backoff", relay.DefaultMaxBackoff, "longest wait between reconnections")
	idle := fs.Duration("idle-timeout", relay.DefaultIdleTimeout, "reopen a stream silent (not even a keep-alive) for this long")
	fwdTimeout := fs.Duration("forward-timeout", 30*time.Second, "time allowed for each re-POST to --target")
	jsonLog := fs.Bool("json", false, "log JSON lines instead of text")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if *source == "" {
		return fs.usageError("--source is required: a channel URL, such as http://127.0.0.1:3001/CHANNEL ('forgehooks proxy' serves them; open /new for one)")
	}
	if u, err := url.Parse(*source); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fs.usageError("--source %q is not an http(s) URL", *source)
	}
	if *target != "" && *secretF != "" {
		return fs.usageError("give --target (re-POST) or --secret (verify here), not both: with --target, the receiver verifies")
	}
	log := fs.logger(*jsonLog)
	var handle relay.Handler
	var wh *webhooks.Webhooks
	if *target != "" {
		if u, err := url.Parse(*target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fs.usageError("--target %q is not an http(s) URL", *target)
		}
		client := &http.Client{Timeout: *fwdTimeout}
		handle = func(ctx context.Context, m *relay.Message) error {
			return forward(ctx, client, *target, m, log)
		}
	} else {
		secret := fs.secret(*secretF)
		if secret == "" {
			return fs.usageError("nothing to do with deliveries: give --target URL to re-POST them, or --secret S (or $%s) to verify and dispatch them here", secretEnv)
		}
		var err error
		if wh, err = webhooks.New(webhooks.Options{Secret: secret, Logger: log}); err != nil {
			return fs.usageError("%v", err)
		}
		wh.OnAny(recordDelivery) // the logging handler: its findings go in dispatch's line
		if c.setup != nil {
			c.setup(wh)
		}
		handle = func(ctx context.Context, m *relay.Message) error {
			return dispatch(ctx, wh, secret, *sha1, m, log)
		}
	}
	err := relay.Run(ctx, relay.Options{
		Source:        *source,
		Handle:        handle,
		LastEventID:   *lastID,
		MaxEventBytes: *maxEvent,
		MaxBackoff:    *maxBackoff,
		IdleTimeout:   *idle,
		Logger:        log,
		OnConnect:     c.connected,
	})
	if wh != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		wh.Close(cctx)
	}
	if err != nil {
		return fs.fail("%s", strings.TrimPrefix(err.Error(), "relay: "))
	}
	return exitOK
}

// deliveryAttrs are the log attributes of a relayed delivery.
func deliveryAttrs(m *relay.Message) []any {
	name := m.Event()
	if a := (emitter.Event{Payload: m.Body}).Action(); a != "" {
		name += "." + a
	}
	return []any{"id", m.DeliveryID(), "event", name, "event_id", m.EventID, "bytes", len(m.Body)}
}

// forward re-POSTs m to target and logs the outcome.
func forward(ctx context.Context, client *http.Client, target string, m *relay.Message, log *slog.Logger) error {
	attrs := deliveryAttrs(m)
	res, err := relay.Forward(ctx, client, target, m)
	if err != nil {
		log.Error("forward failed: "+err.Error(), attrs...)
		return err
	}
	attrs = append(attrs, "status", res.StatusCode)
	if !res.OK() {
		log.Warn("forwarded; target refused: "+reason(res.Body), attrs...)
		return fmt.Errorf("target answered %s", res.Status)
	}
	log.Info("forwarded", attrs...)
	return nil
}

func reason(body []byte) string {
	r := &recorder{}
	r.body.Write(body)
	return r.reason()
}

// errSHA1Mismatch is the error of a delivery whose legacy sha1 signature failed.
var errSHA1Mismatch = errors.New("sha1 signature does not match event payload and secret")

// dispatch verifies m and dispatches it to wh, and logs the outcome.
func dispatch(ctx context.Context, wh *webhooks.Webhooks, secret string, allowSHA1 bool, m *relay.Message, log *slog.Logger) error {
	info := &deliveryInfo{}
	ctx = context.WithValue(ctx, infoKey{}, info)
	attrs := deliveryAttrs(m)
	if m.Event() == "" {
		log.Warn("delivery skipped: no x-forge-event header in the message", attrs...)
		return errors.New("no event name")
	}
	sig, isSHA1 := m.Signature(allowSHA1)
	var err error
	if isSHA1 {
		ok, verr := signing.VerifySHA1(secret, m.Body, sig)
		if ok {
			err = wh.Receive(ctx, emitter.Event{ID: m.DeliveryID(), Name: m.Event(), Payload: m.Body})
		} else {
			err = errors.Join(errSHA1Mismatch, verr)
		}
	} else {
		err = wh.VerifyAndReceive(ctx, webhooks.Delivery{ID: m.DeliveryID(), Name: m.Event(), Payload: m.Body, Signature: sig})
	}
	mismatch := errors.Is(err, webhooks.ErrSignatureMismatch) || errors.Is(err, errSHA1Mismatch)
	info.mu.Lock()
	attrs = append(attrs, "repository", info.repository, "sender", info.user)
	info.mu.Unlock()
	switch {
	case err == nil:
		log.Info("delivery verified and dispatched", attrs...)
	case mismatch && m.Reserialized():
		err = fmt.Errorf("%w (%w)", m.ReserializedError(), err)
		log.Error("delivery rejected: "+err.Error(), attrs...)
	case mismatch && sig == "":
		log.Error("delivery rejected: no X-Hub-Signature-256 header in the message (use --sha1 to accept the old X-Hub-Signature)", attrs...)
	case mismatch:
		log.Error("delivery rejected: signature does not match; is --secret the secret set on the forge?", attrs...)
	default:
		log.Error("delivery failed: "+err.Error(), attrs...)
	}
	return err
}
