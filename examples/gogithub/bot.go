// Package gogithub is a bot that answers through the forge's REST API with
// go-github over the client package app gives a handler: it thanks whoever
// comments on an issue, as the app installation that sent the delivery. It is
// a module of its own, so that go-github is no dependency of forgehooks.
package gogithub

import (
	"context"
	"fmt"

	"github.com/google/go-github/v75/github"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// Register adds the bot's handler to wh. forgeApp holds the app's
// credentials; apiURL is a self-hosted forge's REST API
// ("https://forge.example/api/v3", the same as forgeApp's Options.APIURL),
// or "" for the public forge.
func Register(wh *webhooks.Webhooks, forgeApp *app.App, apiURL string) {
	payloads.OnIssueCommentCreatedEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.IssueCommentCreatedEvent]) error {
		p := e.Payload
		if t := p.Sender.Type; t != nil && *t == "Bot" {
			return nil // never answer a bot, itself included
		}
		c, err := forgeApp.Client(ctx) // as the delivery's installation
		if err != nil {
			return err
		}
		gh := github.NewClient(c)
		if apiURL != "" {
			if gh, err = gh.WithEnterpriseURLs(apiURL, apiURL); err != nil {
				return err
			}
		}
		body := fmt.Sprintf("Thanks, @%s!", p.Sender.Login)
		_, _, err = gh.Issues.CreateComment(ctx, p.Repository.Owner.GetLogin(), p.Repository.Name, int(p.Issue.Number), &github.IssueComment{Body: &body})
		return err // an error is retried by the inbox
	})
}
