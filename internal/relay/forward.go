package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// forgeHeaders are the headers Forward copies besides the X-Forge-* and X-Hub-*
// families: those a forge's delivery carries that a receiver reads.
var forgeHeaders = []string{"Content-Type", "User-Agent"}

// ForwardHeader reports whether Forward copies the header name to the target:
// Content-Type, User-Agent, and every X-Forge-* and X-Hub-* header (the event,
// delivery and signature headers and the others of their families the forge
// sends). Anything else the channel's sender added (Authorization, Cookie,
// X-Forwarded-For, ...) stays out: a channel is open to anyone who knows its URL,
// and the target trusts what reaches it from the relay more than what reaches
// the proxy.
//
// The inbox's forwarder (inbox.Forward) has the opposite rule on purpose: it
// copies every stored header but the hop-by-hop ones. What it forwards came
// to the operator's own endpoint and passed the middleware's signature check
// before it was stored, so its headers are the forge's request's, and a
// target may want any of them; what a relay reads was posted to a channel,
// possibly unsigned, by anyone. Only the signed body is the same in both.
func ForwardHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	for _, h := range forgeHeaders {
		if name == h {
			return true
		}
	}
	return strings.HasPrefix(name, "X-Forge-") || strings.HasPrefix(name, "X-Hub-")
}

// ForwardResult is the target's answer to a forwarded delivery.
type ForwardResult struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Status is the status line's text, such as "200 OK".
	Status string
	// Body is the start of the answer's body (at most 4 KiB).
	Body []byte
}

// OK reports a 2xx answer.
func (r *ForwardResult) OK() bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// Forward POSTs m to target, with the forge's headers only (see ForwardHeader)
// and its body bytes as they are. The message's query string is not used: it is
// whatever the channel's sender appended to the channel URL. A non-2xx answer is
// a result, not an error: the error is for a request that got no answer.
func Forward(ctx context.Context, client *http.Client, target string, m *Message) (*ForwardResult, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("relay: target: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(m.Body))
	if err != nil {
		return nil, fmt.Errorf("relay: target: %w", err)
	}
	h := http.Header{}
	for name, vs := range m.Header {
		if ForwardHeader(name) {
			h[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
		}
	}
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", "") // not Go's default: the forge's request had none
	}
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection can be reused
	return &ForwardResult{StatusCode: resp.StatusCode, Status: resp.Status, Body: body}, nil
}
