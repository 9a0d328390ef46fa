package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	awslambda "github.com/aws/aws-lambda-go/lambda"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/webhooks"
)

// Options configure a Function. The zero value serves deliveries on any path
// with the middleware's defaults and refuses scheduled events.
type Options struct {
	// Middleware configures the middleware that verifies and dispatches each
	// delivery. Inline is always set: Lambda freezes the process once an
	// invocation returns, so the handlers run before the answer
	// (webhooks.NewMiddleware panics, as it documents, on a positive
	// Timeout without an Inbox). With Path empty, every path is a delivery:
	// a function URL is the whole route. With Path set ("/t/{tenant}/hooks"
	// for webhooks.Options.Tenants), only requests to it are, and others are
	// answered 404.
	Middleware webhooks.MiddlewareOptions
	// Catchup, when set, is what a scheduled event runs catchup.Run with;
	// nil: a scheduled event is an error. Its Checkpoints should be nil: a
	// function keeps no state between invocations, and the forge's delivery
	// log is the state (a delivery whose last attempt succeeded is not asked
	// for again). CatchupFromEnv reads one from the environment.
	Catchup *catchup.Options
}

// Function is a forge webhook receiver as one AWS Lambda function. Its Invoke
// takes the events of a function URL and an API Gateway HTTP API (payload
// format 2.0) and of an Application Load Balancer target group, which carry
// deliveries, and the scheduled event of an EventBridge rule, which runs
// catch-up. A Function is safe for concurrent use.
type Function struct {
	handler http.Handler
	catchup *catchup.Options
}

// New returns a Function that verifies deliveries for wh and runs its
// handlers. It panics when wh is nil, as webhooks.NewMiddleware does.
func New(wh *webhooks.Webhooks, opts Options) *Function {
	mo := opts.Middleware
	mo.Inline = true
	mw := webhooks.NewMiddleware(wh, mo)
	var h http.Handler = mw
	if mo.Path == "" {
		h = mw.AnyPath()
	}
	return &Function{handler: h, catchup: opts.Catchup}
}

// Start serves Lambda invocations with f.Invoke through the Lambda Runtime API
// (the address in AWS_LAMBDA_RUNTIME_API) and does not return: it exits the
// process when the runtime API cannot be reached, which is how a function's
// instance ends.
func (f *Function) Start() { awslambda.Start(f.Invoke) }

// CatchupResult is what a scheduled invocation returns.
type CatchupResult struct {
	// Requested counts the redeliveries asked for.
	Requested int `json:"requested"`
	// Entries counts the delivery ids the log window held.
	Entries int `json:"entries"`
}

// ErrUnknownEvent is returned by Invoke for an event that is neither an HTTP
// request of a kind Invoke takes nor a scheduled event.
var ErrUnknownEvent = errors.New("lambda: unknown event: neither an HTTP request (payload format 2.0, or a load balancer's) nor a scheduled event")

// Invoke handles one Lambda event, as Start hands it over. A request event is
// answered with the platform's response event (an error only for an event
// that cannot be decoded): a delivery that fails verification or a handler
// is an HTTP answer, not an invocation error, so that the forge sees it. A
// scheduled event returns a CatchupResult, and catchup.Run's error.
func (f *Function) Invoke(ctx context.Context, event json.RawMessage) (any, error) {
	var probe struct {
		Version        string `json:"version"`
		Source         string `json:"source"`
		DetailType     string `json:"detail-type"`
		RequestContext struct {
			ELB json.RawMessage `json:"elb"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(event, &probe); err != nil {
		return nil, fmt.Errorf("lambda: event is not a JSON object: %w", err)
	}
	switch {
	case probe.Source == "aws.events" && probe.DetailType == "Scheduled Event":
		return f.scheduled(ctx)
	case probe.RequestContext.ELB != nil:
		return f.alb(ctx, event)
	case probe.Version == "2.0":
		// Function URLs and HTTP APIs send the same payload format 2.0.
		return f.v2(ctx, event)
	}
	return nil, ErrUnknownEvent
}

func (f *Function) scheduled(ctx context.Context) (CatchupResult, error) {
	if f.catchup == nil {
		return CatchupResult{}, errors.New("lambda: scheduled event, but catch-up is not configured (Options.Catchup)")
	}
	rep, err := catchup.Run(ctx, *f.catchup)
	return CatchupResult{Requested: rep.Requested, Entries: len(rep.Entries)}, err
}
