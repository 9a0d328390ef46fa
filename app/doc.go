// Package app lets a forge app's handlers answer through the forge's REST API
// as the app (with its JWT) or as one of its installations (with an
// installation access token), using the standard library alone.
//
// An [App] holds the app's id and private key. It signs the app's RS256 JWT,
// asks the forge for installation tokens (POST
// /app/installations/{id}/access_tokens), keeps each until shortly before it
// expires, and fetches it once however many handlers need it at the same time.
// Its [http.RoundTripper]s add the credentials to requests for the API's host
// (and to no other host), share one rate-limit budget per installation, wait
// as the forge asks (Retry-After, X-RateLimit-Remaining and X-RateLimit-Reset,
// secondary limits) up to Options.MaxWait, and retry idempotent requests on
// 5xx. Any REST client built on net/http can use them.
//
// From a handler, [App.Client] gives the client of the installation that sent
// the delivery:
//
//	payloads.OnIssueCommentCreatedEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
//		c, err := forgeApp.Client(ctx)
//		if err != nil {
//			return err
//		}
//		res, err := c.Post(e.Payload.Issue.CommentsURL, "application/json", strings.NewReader(`{"body":"Thanks!"}`))
//		…
//	})
//
// A tenant's hook (a repository's or organization's, with
// webhooks.Options.Tenants) sends deliveries that name no installation: with
// Options.Tenants set, [App.Client] acts as the tenant's Installation, or with
// its Token, at its APIURL when it has one (a self-hosted forge), and fails
// with [ErrNoCredentials] when the tenant has neither.
//
// Tokens and JWTs are [Token] values, which print, log and marshal as
// "[redacted]"; no error or log line of this package contains one.
package app
