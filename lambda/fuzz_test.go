package lambda_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/webhooks"
)

// FuzzInvoke: any event is either an invocation error or an HTTP answer with
// a status code; none panics.
func FuzzInvoke(f *testing.F) {
	for _, s := range []string{functionURLEvent, httpAPIEvent, albEvent, albMultiEvent} {
		f.Add([]byte(s))
	}
	f.Add([]byte(scheduledEvent))
	f.Add([]byte(`{"version":"2.0","requestContext":{"http":{"method":"GE T"}},"rawPath":"%zz"}`))
	f.Add([]byte(`{"requestContext":{"elb":{}},"httpMethod":"POST","path":"/\n","body":"=","isBase64Encoded":true}`))
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		f.Fatal(err)
	}
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	fn := lambda.New(wh, lambda.Options{})
	f.Fuzz(func(t *testing.T, event []byte) {
		out, err := fn.Invoke(context.Background(), event)
		if err != nil {
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("the answer does not marshal: %v", err)
		}
		var hr httpResponse
		if err := json.Unmarshal(b, &hr); err != nil {
			t.Fatal(err)
		}
		if hr.StatusCode < 100 || hr.StatusCode > 599 {
			t.Fatalf("status %d: %s", hr.StatusCode, b)
		}
		if hr.IsBase64Encoded {
			if _, err := base64.StdEncoding.DecodeString(hr.Body); err != nil {
				t.Fatalf("body marked base64 is not: %v", err)
			}
		}
	})
}

// FuzzBody: whatever text a signed delivery's payload holds, handed over
// base64-encoded or as text, the handler gets the bytes the forge signed.
func FuzzBody(f *testing.F) {
	f.Add("café ☕", true)
	f.Add("\x00\xff\xfe", false)
	f.Add("line\r\nbreak \u2028", true)
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		f.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string][]byte{}
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got[e.ID] = bytes.Clone(e.Payload)
		return nil
	})
	fn := lambda.New(wh, lambda.Options{})
	f.Fuzz(func(t *testing.T, text string, b64 bool) {
		payload, err := json.Marshal(map[string]string{"action": "opened", "text": text})
		if err != nil {
			t.Skip()
		}
		id := newID()
		ev := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RawPath: "/",
			Headers: map[string]string{"content-type": "application/json", "x-forge-event": "issues", "x-forge-delivery": id,
				"x-hub-signature-256": sign(t, secret, payload)},
			Body: string(payload),
		}
		ev.RequestContext.HTTP.Method = http.MethodPost
		if b64 {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(payload), true
		}
		event, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := fn.Invoke(context.Background(), event)
		if err != nil {
			t.Fatal(err)
		}
		res, ok := out.(events.APIGatewayV2HTTPResponse)
		if !ok || res.StatusCode != http.StatusOK {
			t.Fatalf("answer %+v, want 200", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if !bytes.Equal(got[id], payload) {
			t.Fatalf("handler got %q, want %q", got[id], payload)
		}
	})
}
