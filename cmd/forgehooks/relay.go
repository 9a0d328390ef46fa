package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/atomicfile"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/deliverylog"
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
$FORGE_WEBHOOK_SECRET), or re-POST it to --target with the forge's headers
(Content-Type, User-Agent, X-Forge-*, X-Hub-*; no other header, and not the
channel's query string) and the exact body bytes. With --target and a secret,
the signature is checked first: a delivery that fails it is logged and dropped,
never forwarded. The stream is reopened when it drops, with Last-Event-ID, so a
proxy that keeps a replay buffer sends what was missed; with --state FILE the
last event id is kept in FILE, so that a restarted relay resumes after it.
Ctrl-C stops it.

The body is taken from the message's bodyB (exact bytes), else rawBody, else
body as it stands in the message. A channel event may be at most
--max-event-bytes long: 96 MiB by default, room for a 25 MiB delivery (the
forge's limit) carried twice, as JSON and as base64 (33.4 MiB).`)
	source := fs.String("source", "", "channel URL, such as http://127.0.0.1:3001/CHANNEL (required)")
	target := fs.String("target", "", "re-POST each delivery here, such as http://127.0.0.1:3000"+webhooks.DefaultPath)
	secretF := fs.secretFlag()
	sha1 := fs.Bool("sha1", false, "also accept the old X-Hub-Signature (HMAC-SHA1) header when X-Hub-Signature-256 is absent")
	lastID := fs.String("last-event-id", "", "resume after this event id (sent as Last-Event-ID)")
	readToken := fs.String("read-token", "", "the channel's read token, for a channel made with /new?token=1, sent as Authorization: Bearer (default: $"+readTokenEnv+"; or put ?token= in --source)")
	stateFile := fs.String("state", "", "file that keeps the last event id: read at start to resume after it (unless --last-event-id is given), rewritten after each delivery")
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
	if err := checkHTTPURL(*source); err != nil {
		return fs.usageError("bad --source: %v", err)
	}
	log := fs.logger(*jsonLog)
	var checkpoint func(string)
	if *stateFile != "" {
		saved, err := readRelayState(*stateFile)
		if err != nil {
			return fs.fail("--state: %v", err)
		}
		if *lastID == "" && saved != "" {
			*lastID = saved
			log.Info("resuming after the event id kept in the state file", "state", *stateFile, "last_event_id", clip.String(saved))
		}
		checkpoint = func(id string) {
			if err := writeRelayState(*stateFile, id); err != nil {
				log.Error("state file not updated: "+err.Error(), "state", *stateFile)
			}
		}
	}
	var handle relay.Handler
	var wh *webhooks.Webhooks
	if *target != "" {
		if err := checkHTTPURL(*target); err != nil {
			return fs.usageError("bad --target: %v", err)
		}
		client := &http.Client{Timeout: *fwdTimeout}
		secret := fs.secret(*secretF)
		if secret == "" {
			log.Warn("no secret: deliveries are forwarded unverified, and the target must check their signatures (give --secret or $" + secretEnv + " to drop forged ones here)")
		}
		handle = func(ctx context.Context, m *relay.Message) error {
			return forward(ctx, client, *target, secret, *sha1, m, log)
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
		wh.OnAny(deliverylog.Note) // the logging handler: its findings go in dispatch's line
		if c.setup != nil {
			c.setup(wh)
		}
		handle = func(ctx context.Context, m *relay.Message) error {
			return dispatch(ctx, wh, secret, *sha1, m, log)
		}
	}
	if *readToken == "" {
		*readToken = c.getenv(readTokenEnv)
	}
	err := relay.Run(ctx, relay.Options{
		Source:        *source,
		ReadToken:     *readToken,
		Handle:        handle,
		LastEventID:   *lastID,
		MaxEventBytes: *maxEvent,
		MaxBackoff:    *maxBackoff,
		IdleTimeout:   *idle,
		Logger:        log,
		OnConnect:     c.connected,
		Checkpoint:    checkpoint,
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

// readTokenEnv is the environment variable relay takes a channel's read token
// from when --read-token is not given: command lines are visible to other
// users of the machine.
const readTokenEnv = "FORGEHOOKS_READ_TOKEN"

// deliveryAttrs are the log attributes of a relayed delivery.
func deliveryAttrs(m *relay.Message) []any {
	name := m.Event()
	if a := (emitter.Event{Payload: m.Body}).Action(); a != "" {
		name += "." + a
	}
	return []any{"id", clip.String(m.DeliveryID()), "event", clip.String(name), "event_id", clip.String(m.EventID), "bytes", len(m.Body)}
}

// errForged is the error of a delivery relay --target drops because its
// signature does not match the secret.
var errForged = errors.New("signature does not match: not forwarded")

// forward re-POSTs m to target and logs the outcome. With a secret, m is
// verified first, and dropped when it fails.
func forward(ctx context.Context, client *http.Client, target, secret string, allowSHA1 bool, m *relay.Message, log *slog.Logger) error {
	attrs := deliveryAttrs(m)
	if secret != "" {
		sig, isSHA1 := m.Signature(allowSHA1)
		var ok bool
		if isSHA1 {
			ok, _ = signing.VerifySHA1(secret, m.Body, sig)
		} else {
			ok, _ = signing.Verify(secret, m.Body, sig)
		}
		if !ok {
			why := "signature does not match; is --secret the secret set on the forge?"
			switch {
			case m.Reserialized():
				why = m.ReserializedError().Error()
			case sig == "":
				why = "no X-Hub-Signature-256 header in the message"
			}
			log.Error("delivery dropped, not forwarded: "+why, attrs...)
			return errForged
		}
	}
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

// errSHA1Mismatch is the error of a delivery whose legacy sha1 signature failed.
var errSHA1Mismatch = errors.New("sha1 signature does not match event payload and secret")

// dispatch verifies m and dispatches it to wh, and logs the outcome.
func dispatch(ctx context.Context, wh *webhooks.Webhooks, secret string, allowSHA1 bool, m *relay.Message, log *slog.Logger) error {
	ctx, info := deliverylog.With(ctx)
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
	_, repository, sender := info.Fields()
	attrs = append(attrs, "repository", repository, "sender", sender)
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

// maxStateBytes bounds the relay's state file: an event id is short.
const maxStateBytes = 4 << 10

// readRelayState returns the event id kept in path, or "" when path does not
// exist yet (the first run).
func readRelayState(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(b), "\n")
	if len(b) > maxStateBytes || strings.ContainsAny(id, "\r\n\x00") {
		return "", fmt.Errorf("%s does not hold an event id (one line of at most %d bytes); remove it to start from now", path, maxStateBytes)
	}
	return id, nil
}

// writeRelayState replaces path's content with id, through a temporary file
// and a rename, so that a relay stopped halfway leaves the old id, not a
// truncated one.
func writeRelayState(path, id string) error {
	return atomicfile.Write(path, []byte(id+"\n"), 0o600)
}

// reason is the error message of a JSON error answer, or its text.
func reason(body []byte) string {
	var e struct{ Error string }
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(body))
}
