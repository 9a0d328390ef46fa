package lambda_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const secret = "lambda-test-secret-0123456789abc"

// The events as the platforms send them: a function URL (the body
// base64-encoded), an HTTP API (payload format 2.0, the body as text) and a
// load balancer (single- and multi-valued headers). Header names come in
// whatever case the platform gives them. The verbs are the event name, the
// delivery id, the signature and the body; the function URL's also its path.
const (
	functionURLEvent = `{
  "version": "2.0", "routeKey": "$default", "rawPath": "/", "rawQueryString": "",
  "headers": {"content-type": "application/json", "user-agent": "forge-hookshot/1", "x-forge-event": %[1]q,
    "x-forge-delivery": %[2]q, "x-hub-signature-256": %[3]q, "host": "abcdefgh.lambda-url.us-east-1.on.aws",
    "x-forwarded-proto": "https", "x-amzn-trace-id": "Root=1-5e1b4151-5ac6c58f5a7a8e7a1d2ab0f3"},
  "requestContext": {"accountId": "anonymous", "apiId": "abcdefgh", "domainName": "abcdefgh.lambda-url.us-east-1.on.aws",
    "domainPrefix": "abcdefgh", "http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
    "userAgent": "forge-hookshot/1"}, "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef", "routeKey": "$default",
    "stage": "$default", "time": "27/Nov/2026:23:00:00 +0000", "timeEpoch": 1795820400000},
  "body": %[4]q, "isBase64Encoded": true
}`
	httpAPIEvent = `{
  "version": "2.0", "routeKey": "POST /hooks", "rawPath": "/hooks", "rawQueryString": "source=forge",
  "headers": {"Content-Type": "application/json", "X-FORGE-EVENT": %[1]q, "X-Forge-Delivery": %[2]q, "X-HUB-SIGNATURE-256": %[3]q},
  "queryStringParameters": {"source": "forge"},
  "requestContext": {"accountId": "123456789012", "apiId": "api1234567", "domainName": "api1234567.execute-api.us-east-1.amazonaws.com",
    "domainPrefix": "api1234567", "http": {"method": "POST", "path": "/hooks", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1",
    "userAgent": "forge-hookshot/1"}, "requestId": "JKJaXmPLvHcESHA=", "routeKey": "POST /hooks", "stage": "$default",
    "time": "27/Nov/2026:23:00:00 +0000", "timeEpoch": 1795820400000},
  "body": %[4]q, "isBase64Encoded": false
}`
	albEvent = `{
  "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hooks/0123456789abcdef"}},
  "httpMethod": "POST", "path": "/hooks", "queryStringParameters": {},
  "headers": {"content-type": "application/json", "x-forge-event": %[1]q, "x-forge-delivery": %[2]q, "x-hub-signature-256": %[3]q},
  "body": %[4]q, "isBase64Encoded": true
}`
	albMultiEvent = `{
  "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hooks/0123456789abcdef"}},
  "httpMethod": "POST", "path": "/hooks", "multiValueQueryStringParameters": {},
  "multiValueHeaders": {"content-type": ["application/json"], "X-Forge-Event": [%[1]q], "x-forge-delivery": [%[2]q], "X-Hub-Signature-256": [%[3]q]},
  "body": %[4]q, "isBase64Encoded": false
}`
	tenantURLEvent = `{
  "version": "2.0", "routeKey": "$default", "rawPath": %[5]q, "rawQueryString": "",
  "headers": {"content-type": "application/json", "x-forge-event": %[1]q, "x-forge-delivery": %[2]q, "x-hub-signature-256": %[3]q},
  "requestContext": {"domainName": "abcdefgh.lambda-url.us-east-1.on.aws", "http": {"method": "POST", "path": %[5]q, "sourceIp": "192.0.2.1"}},
  "body": %[4]q, "isBase64Encoded": true
}`
	scheduledEvent = `{
  "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "Scheduled Event", "source": "aws.events",
  "account": "123456789012", "time": "2026-11-27T23:15:00Z", "region": "us-east-1",
  "resources": ["arn:aws:events:us-east-1:123456789012:rule/forgehooks-catchup"], "detail": {}
}`
)

// httpResponse is the part of any of the platforms' responses the tests read.
type httpResponse struct {
	StatusCode        int                 `json:"statusCode"`
	StatusDescription string              `json:"statusDescription"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

func sign(t testing.TB, key string, b []byte) string {
	s, err := signing.Sign(key, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ran records the deliveries a Webhooks' handlers ran, with their tenants.
type ran struct {
	mu  sync.Mutex
	ids map[string]string // delivery id → tenant
}

func (r *ran) handler(ctx context.Context, e emitter.Event) error {
	d, _ := webhooks.DeliveryFrom(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[e.ID] = d.Tenant
	if e.Name == "fails" {
		return errors.New("the handler fails")
	}
	return nil
}

func (r *ran) tenant(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tn, ok := r.ids[id]
	return tn, ok
}

// TestInvoke calls Invoke with each kind of event, in the process: the
// request it becomes, the answer it gets, and whether the handlers ran
// before Invoke returned.
func TestInvoke(t *testing.T) {
	t.Parallel()
	rec := &ran{ids: map[string]string{}}
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	wh.OnAny(rec.handler)
	fn := lambda.New(wh, lambda.Options{})

	tenants := &ran{ids: map[string]string{}}
	twh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(webhooks.StaticTenants{
		"acme":   {Secrets: []string{"acme-secret-0123456789abcdef"}},
		"globex": {Secrets: []string{"globex-secret-0123456789abcdef"}},
	}, webhooks.TenantsOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	twh.OnAny(tenants.handler)
	tfn := lambda.New(twh, lambda.Options{Middleware: webhooks.MiddlewareOptions{Path: "/t/{tenant}/hooks"}})

	payload := []byte(`{"action":"opened","issue":{"number":1,"title":"caf\u00e9 ☕"}}`)
	good, bad := sign(t, secret, payload), sign(t, "another-secret-0123456789", payload)
	b64 := base64.StdEncoding.EncodeToString(payload)

	tests := []struct {
		name     string
		fn       *lambda.Function
		rec      *ran
		event    string // the template, whose %[2]s is the delivery id
		args     []any  // the template's arguments but the id
		status   int
		ran      bool
		tenant   string
		bodyHas  string
		multiVal bool
	}{
		{name: "function URL, base64 body", event: functionURLEvent, args: []any{"issues", good, b64}, status: 200, ran: true},
		{name: "function URL, wrong signature", event: functionURLEvent, args: []any{"issues", bad, b64}, status: 400},
		{name: "function URL, signed over the base64 text", event: functionURLEvent, args: []any{"issues", sign(t, secret, []byte(b64)), b64}, status: 400},
		{name: "function URL, body not base64", event: functionURLEvent, args: []any{"issues", good, "not base64!"}, status: 400, bodyHas: "base64"},
		{name: "HTTP API, text body, headers in upper case", event: httpAPIEvent, args: []any{"issues", good, string(payload)}, status: 200, ran: true},
		{name: "load balancer, base64 body", event: albEvent, args: []any{"issues", good, b64}, status: 200, ran: true},
		{name: "load balancer, multi-valued headers", event: albMultiEvent, args: []any{"issues", good, string(payload)}, status: 200, ran: true, multiVal: true},
		{name: "handler fails", event: functionURLEvent, args: []any{"fails", good, b64}, status: 500, ran: true},
		{name: "tenant acme on its path", fn: tfn, rec: tenants, event: tenantURLEvent,
			args: []any{"issues", sign(t, "acme-secret-0123456789abcdef", payload), b64, "/t/acme/hooks"}, status: 200, ran: true, tenant: "acme"},
		{name: "tenant globex on its path", fn: tfn, rec: tenants, event: tenantURLEvent,
			args: []any{"issues", sign(t, "globex-secret-0123456789abcdef", payload), b64, "/t/globex/hooks"}, status: 200, ran: true, tenant: "globex"},
		{name: "tenant signed with another tenant's secret", fn: tfn, rec: tenants, event: tenantURLEvent,
			args: []any{"issues", sign(t, "acme-secret-0123456789abcdef", payload), b64, "/t/globex/hooks"}, status: 400},
		{name: "outside Middleware.Path", fn: tfn, rec: tenants, event: tenantURLEvent,
			args: []any{"issues", sign(t, "acme-secret-0123456789abcdef", payload), b64, "/elsewhere"}, status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, r := fn, rec
			if tt.fn != nil {
				f, r = tt.fn, tt.rec
			}
			id := newID()
			args := append([]any{tt.args[0], id}, tt.args[1:]...)
			out, err := f.Invoke(context.Background(), json.RawMessage(fmt.Sprintf(tt.event, args...)))
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			b, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			var hr httpResponse
			if err := json.Unmarshal(b, &hr); err != nil {
				t.Fatal(err)
			}
			if hr.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", hr.StatusCode, hr.Body, tt.status)
			}
			if tt.bodyHas != "" && !strings.Contains(hr.Body, tt.bodyHas) {
				t.Errorf("body %q, want it to mention %q", hr.Body, tt.bodyHas)
			}
			tenant, did := r.tenant(id)
			if did != tt.ran || tenant != tt.tenant {
				t.Fatalf("handler ran before Invoke returned: %v (tenant %q), want %v (tenant %q)", did, tenant, tt.ran, tt.tenant)
			}
			if tt.event == albEvent && hr.StatusDescription != "200 OK" {
				t.Errorf("load balancer response: %+v, want status description 200 OK", hr)
			}
			if tt.multiVal != (hr.MultiValueHeaders != nil) || tt.multiVal && hr.MultiValueHeaders["Content-Type"] == nil {
				t.Errorf("multi-valued headers in the response: %v, want them: %v", hr.MultiValueHeaders, tt.multiVal)
			}
		})
	}
}

// TestInvokeRefuses: the events that are no request Invoke can answer are
// invocation errors, which the platform logs, not HTTP answers.
func TestInvokeRefuses(t *testing.T) {
	t.Parallel()
	wh, err := webhooks.New(webhooks.Options{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	fn := lambda.New(wh, lambda.Options{})
	tests := []struct {
		name, event, want string
	}{
		{"not JSON", `hello`, "not a JSON object"},
		{"a JSON array", `[1]`, "not a JSON object"},
		{"unknown event", `{"hello":"world"}`, "unknown event"},
		{"payload format 1.0", `{"version":"1.0","httpMethod":"POST","path":"/"}`, "unknown event"},
		{"2.0 with a headers field of the wrong type", `{"version":"2.0","headers":[1]}`, "payload format 2.0 event"},
		{"load balancer with a body of the wrong type", `{"requestContext":{"elb":{}},"body":1}`, "load balancer event"},
		{"scheduled, without catch-up", scheduledEvent, "catch-up is not configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := fn.Invoke(context.Background(), json.RawMessage(tt.event))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Invoke: %v (%+v), want an error saying %q", err, out, tt.want)
			}
			if tt.want == "unknown event" && !errors.Is(err, lambda.ErrUnknownEvent) {
				t.Errorf("error %v is not ErrUnknownEvent", err)
			}
		})
	}
}
