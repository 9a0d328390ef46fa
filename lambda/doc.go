// Package lambda runs a forge webhook receiver as one AWS Lambda function:
// deliveries arrive as the events of a function URL, an API Gateway HTTP API
// (payload format 2.0) or an Application Load Balancer target group, and an
// EventBridge scheduled event runs catch-up (package catchup), which asks the
// forge to redeliver what the function failed.
//
// It is a module of its own (forgehooks.dev/forgehooks/lambda), so that
// github.com/aws/aws-lambda-go is a dependency of the programs that deploy to
// Lambda and of no other forgehooks user.
//
// A function is a main package that registers its handlers and starts:
//
//	func main() {
//		wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
//		if err != nil {
//			log.Fatal(err)
//		}
//		wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
//			slog.InfoContext(ctx, "issue opened", "delivery", e.ID)
//			return nil
//		})
//		co, err := lambda.CatchupFromEnv(os.Getenv)
//		if err != nil {
//			log.Fatal(err)
//		}
//		lambda.New(wh, lambda.Options{Catchup: co}).Start()
//	}
//
// The handlers run inside the invocation, before the answer
// (webhooks.MiddlewareOptions.Inline): Lambda freezes the process once an
// invocation returns, so nothing may be left to run after it. A handler's
// error answers 500, which the forge's delivery log records as failed, and
// the next scheduled catch-up has it redelivered.
//
// # Deploying
//
// Build for the custom runtime, whose executable is named bootstrap; the
// lambda.norpc tag leaves out the RPC server that only the retired go1.x
// runtime used:
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap .
//	zip function.zip bootstrap
//	aws lambda create-function --function-name forgehooks \
//		--runtime provided.al2023 --architectures arm64 --handler bootstrap \
//		--zip-file fileb://function.zip --role arn:aws:iam::ACCOUNT:role/ROLE \
//		--environment 'Variables={FORGE_WEBHOOK_SECRET=...}'
//	aws lambda create-function-url-config --function-name forgehooks --auth-type NONE
//	aws lambda add-permission --function-name forgehooks --statement-id url \
//		--action lambda:InvokeFunctionUrl --principal '*' --function-url-auth-type NONE
//	aws lambda add-permission --function-name forgehooks --statement-id url-invoke \
//		--action lambda:InvokeFunction --principal '*' --invoked-via-function-url
//
// The function URL that create-function-url-config prints is the hook's
// payload URL (content type application/json). A public function URL needs
// both permissions; the second is limited to calls through the URL. The
// signature, not the URL, is what keeps others out, so the URL needs no
// authentication of its own.
// The secret comes from the function's environment, as above, or from a
// secret store read once at start (AWS Secrets Manager, or SSM Parameter
// Store through the AWS Parameters and Secrets Lambda Extension), so that it
// is not in the function's configuration. For catch-up, add an EventBridge
// rule with a schedule (rate(15 minutes), say) whose target is the function
// (with add-permission for the principal events.amazonaws.com and the rule's
// ARN as source), and set FORGE_CATCHUP_HOOK with FORGE_TOKEN, or for the app
// hook FORGE_APP_ID and FORGE_APP_PRIVATE_KEY (see CatchupFromEnv).
//
// An HTTP API or a load balancer in front of the function works the same;
// with Options.Middleware.Path set (say "/t/{tenant}/hooks" for
// webhooks.Options.Tenants), only that path is a delivery.
package lambda
