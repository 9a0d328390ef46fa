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

// hopByHop are the headers that belong to one connection, not to the delivery;
// Forward drops them, with Host and Content-Length, which the new request sets
// for itself.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length",
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

// Forward POSTs m to target with its original headers (without hop-by-hop ones,
// Host and Content-Length) and its body bytes as they are. The message's query
// is merged into target's, as smee-client does. A non-2xx answer is a result,
// not an error: the error is for a request that got no answer.
func Forward(ctx context.Context, client *http.Client, target string, m *Message) (*ForwardResult, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("relay: target: %w", err)
	}
	if len(m.Query) > 0 {
		q := u.Query()
		for name, vs := range m.Query {
			q[name] = vs
		}
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(m.Body))
	if err != nil {
		return nil, fmt.Errorf("relay: target: %w", err)
	}
	h := m.Header.Clone()
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
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
