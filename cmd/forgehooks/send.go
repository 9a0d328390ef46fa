package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/internal/proxy"
	"forgehooks.dev/forgehooks/internal/uuid"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

func cmdSend(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "send", "forgehooks send [flags] [file | -]", `
Play the forge: sign a payload and POST it to --url with the forge's headers
(X-Forge-Event, a fresh X-Forge-Delivery, X-Hub-Signature-256, Content-Type:
application/json, User-Agent). The payload is the file given, or stdin ("-", or
no file while stdin is piped), or, with --event alone and nothing piped, a
built-in sample of that event or event.action (followed by whitespace of its
own for each delivery, so that a receiver's replay guard does not take a
second send for a replay of the first). Prints the answer's status and
body; a non-2xx answer exits 1. With --print, prints the signed request instead
of sending it. Sent to a 'forgehooks proxy' channel that no relay listens to,
it warns that no one received the delivery live.`)
	url := fs.String("url", "http://127.0.0.1:3000"+webhooks.DefaultPath, "where to POST: a receiver, or a proxy channel URL")
	secretF := fs.secretFlag()
	event := fs.String("event", "", "event name (NAME or NAME.ACTION); alone, it picks a built-in sample")
	sample := fs.Int("sample", 0, "which built-in sample, when an event.action has several (0 is the first)")
	delivery := fs.String("delivery", "", "X-Forge-Delivery value (default: a fresh random id)")
	timeout := fs.Duration("timeout", 30*time.Second, "time allowed for the whole request")
	printOnly := fs.Bool("print", false, "print the signed request (request line, headers and body) instead of sending it")
	pos, secret, code, done := fs.parseWithSecret(args, secretF)
	if done {
		return code
	}
	if err := checkHTTPURL(*url); err != nil {
		return fs.usageError("bad --url: %v", err)
	}
	name, action, _ := strings.Cut(*event, ".")
	var body []byte
	sampled := false // body is a built-in sample
	if len(pos) > 0 || fs.stdinPiped() {
		var ok bool
		if body, code, ok = fs.readPayload(pos); !ok {
			return code
		}
		if len(pos) == 0 && len(body) == 0 {
			body = nil // nothing was piped: as if stdin were a terminal
		}
	}
	switch {
	case *event == "" && body == nil && len(pos) == 0:
		return fs.usageError("nothing to send: give --event NAME[.ACTION] for a built-in sample, or a payload file (or pipe it to stdin) with --event NAME")
	case *event == "":
		return fs.usageError("--event NAME is required with a payload: it is the X-Forge-Event header")
	case body == nil && len(pos) == 0:
		ex, err := pickSample(name, action, *sample)
		if err != nil {
			return fs.usageError("%v", err)
		}
		body, sampled = ex.Body, true
	}
	id := *delivery
	if id == "" {
		id = uuid.New()
	}
	if sampled {
		body = distinctBody(body, id)
	}
	sig, err := signing.Sign(secret, body)
	if err != nil {
		return fs.fail("cannot sign the payload: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *url, bytes.NewReader(body))
	if err != nil {
		return fs.usageError("bad --url: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "forgehooks-send/"+versionString())
	req.Header.Set(webhooks.HeaderEvent, name)
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	if *printOnly {
		// The request as it would go on the wire (HTTP/1.1), body included.
		if err := req.Write(c.stdout); err != nil {
			return fs.fail("printing the request: %v", err)
		}
		return exitOK
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fs.fail("%v (is a receiver listening at %s? start one with 'forgehooks serve')", err, *url)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	fmt.Fprintln(c.stdout, resp.Status)
	if len(answer) > 0 {
		c.stdout.Write(answer)
		if answer[len(answer)-1] != '\n' {
			fmt.Fprintln(c.stdout)
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return exitFailure
	}
	if n := resp.Header.Get(proxy.HeaderSubscribers); n == "0" {
		fmt.Fprintf(c.stderr, "forgehooks send: warning: the channel has no subscriber, so no relay received this delivery live.\n"+
			"  Start one with 'forgehooks relay --source %s --target URL' (or --secret S). The proxy keeps the delivery\n"+
			"  for a relay that comes back with its last event id (relay --state FILE), not for a new one.\n", *url)
	}
	return exitOK
}

// distinctBody returns the JSON document body followed by whitespace that
// spells id (a tab for each 1 bit of its bytes, a space for each 0): the same
// document to any JSON reader, but a body of its own for each delivery id.
// A receiver's replay guard answers a body already stored under another id
// as a duplicate; a built-in sample sent twice is two deliveries, as two
// events from the forge would be, never the same bytes.
func distinctBody(body []byte, id string) []byte {
	out := make([]byte, 0, len(body)+1+8*len(id))
	out = append(append(out, body...), '\n')
	for i := 0; i < len(id); i++ {
		for bit := 7; bit >= 0; bit-- {
			c := byte(' ')
			if id[i]>>bit&1 == 1 {
				c = '\t'
			}
			out = append(out, c)
		}
	}
	return out
}

// pickSample returns the n-th built-in sample of event (and action, if
// given), numbered as webhookstest.Payloads numbers them (corpus.Samples).
func pickSample(event, action string, n int) (corpus.Example, error) {
	name := event
	if action != "" {
		name += "." + action
	}
	matches := corpus.Samples(name)
	actions := map[string]bool{}
	for _, ex := range corpus.Samples(event) {
		if ex.Action != "" {
			actions[ex.Action] = true
		}
	}
	switch {
	case len(matches) == 0 && len(actions) > 0:
		names := make([]string, 0, len(actions))
		for a := range actions {
			names = append(names, event+"."+a)
		}
		sort.Strings(names)
		return corpus.Example{}, fmt.Errorf("no built-in sample of %s.%s; samples of %s: %s", event, action, event, strings.Join(names, ", "))
	case len(matches) == 0 && !payloads.IsKnownEventName(event):
		return corpus.Example{}, fmt.Errorf("unknown event %q: 'forgehooks events' lists the event names", event)
	case len(matches) == 0:
		return corpus.Example{}, fmt.Errorf("no built-in sample of %q: give a payload file instead", event)
	case n < 0 || n >= len(matches):
		return corpus.Example{}, fmt.Errorf("--sample %d: %s has %d samples (0 to %d)", n, strings.TrimSuffix(event+"."+action, "."), len(matches), len(matches)-1)
	}
	return matches[n], nil
}
