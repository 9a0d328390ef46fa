package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// HeaderAttempt is the header Forward adds: the attempt number, from 1.
const HeaderAttempt = "Forgehooks-Attempt"

// MaxForwardErrorBody is the most bytes of a refusing target's answer that
// Forward's error quotes.
const MaxForwardErrorBody = 256

// Forward returns a handler that POSTs each delivery to url with the
// request's original headers (those stored with it, without the
// connection's) and the exact body bytes, so that the signature still
// verifies, and HeaderAttempt, and for a tenant's delivery
// webhooks.HeaderTenant. It succeeds only on a 2xx answer; any other
// answer or a transport error fails the attempt, which the inbox retries.
// The error starts with the cause: "forward: 503 Service Unavailable: " and
// the answer's first bytes (at most MaxForwardErrorBody, on one line), or
// "forward: " and the transport's error, so that the attempt's log line and
// the start of a listing's LAST ERROR show it (url, the same for every
// delivery, is for the start-up log). Register it with OnAny. A nil client is http.DefaultClient; give one
// with a Timeout.
func Forward(url string, client *http.Client) emitter.Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, e emitter.Event) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(e.Payload))
		if err != nil {
			return fmt.Errorf("inbox: forward: %w", err)
		}
		info, ok := webhooks.DeliveryFrom(ctx)
		for k, v := range info.Header {
			switch http.CanonicalHeaderKey(k) {
			case "Host", "Content-Length", "Connection", "Transfer-Encoding", "Accept-Encoding", "Te", "Trailer", "Upgrade", "Keep-Alive", "Proxy-Connection":
				continue
			}
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
		// A delivery that did not come over HTTP has no headers of its own.
		if req.Header.Get(webhooks.HeaderEvent) == "" {
			req.Header.Set(webhooks.HeaderEvent, e.Name)
		}
		if req.Header.Get(webhooks.HeaderDelivery) == "" && e.ID != "" {
			req.Header.Set(webhooks.HeaderDelivery, e.ID)
		}
		if req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if ok && info.Attempt > 0 {
			req.Header.Set(HeaderAttempt, strconv.Itoa(info.Attempt))
		}
		// Only the tenant the delivery verified with; one the sender wrote
		// in its own request is not passed on.
		req.Header.Del(webhooks.HeaderTenant)
		if info.Tenant != "" {
			req.Header.Set(webhooks.HeaderTenant, info.Tenant)
		}
		resp, err := client.Do(req)
		if err != nil {
			var ue *neturl.Error
			if errors.As(err, &ue) {
				err = ue.Err // its text repeats the method and URL
			}
			return fmt.Errorf("forward: %w", err)
		}
		defer resp.Body.Close()
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, MaxForwardErrorBody))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			body := strings.Join(strings.Fields(strings.ToValidUTF8(string(snippet), "\uFFFD")), " ")
			if body == "" {
				body = "(empty answer)"
			}
			return fmt.Errorf("forward: %s: %s", resp.Status, body)
		}
		return nil
	}
}
