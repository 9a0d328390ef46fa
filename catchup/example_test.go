package catchup_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// A dry run over a repository hook's log: one delivery failed (nobody was
// listening), one succeeded.
func ExampleRun() {
	forge, err := forgetest.Start(forgetest.Options{Token: "example-token"})
	if err != nil {
		log.Fatal(err)
	}
	defer forge.Close()
	hook := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(hook)
	forge.Send(hook, "push", []byte(`{"ref":"refs/heads/main"}`)) // no receiver: fails
	forge.Record(hook, forgetest.Attempt{Event: "issues", Action: "opened", Status: "OK", StatusCode: 200}, []byte(`{"action":"opened"}`))

	rep, err := catchup.Run(context.Background(), catchup.Options{
		APIURL:      forge.URL, // default: catchup.DefaultAPIURL
		Hook:        catchup.RepoHook("octo", "site", 7),
		Credentials: catchup.Token("example-token"), // e.g. from os.Getenv
		DryRun:      true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range rep.Entries {
		fmt.Printf("%s.%s: %s (last status %d)\n", e.Latest.Event, e.Latest.Action, e.Decision, e.Latest.StatusCode)
	}
	// Output:
	// push.: redeliver (last status 0)
	// issues.opened: skip: succeeded (last status 200)
}

// RedeliverGUID asks the forge to send one delivery again, by the delivery id
// the receiver saw (an inspector page's "Redeliver" button).
func ExampleRedeliverGUID() {
	forge, err := forgetest.Start(forgetest.Options{Token: "example-token"})
	if err != nil {
		log.Fatal(err)
	}
	defer forge.Close()
	hook := forgetest.RepoHook("octo", "site", 7)
	forge.AddHook(hook)
	sent := forge.Send(hook, "push", []byte(`{"ref":"refs/heads/main"}`)) // no receiver: fails

	a, err := catchup.RedeliverGUID(context.Background(), catchup.Options{
		APIURL:      forge.URL,
		Hook:        catchup.RepoHook("octo", "site", 7),
		Credentials: catchup.Token("example-token"),
		Logger:      slog.New(slog.DiscardHandler),
	}, sent.GUID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.ID == sent.ID, a.Event)
	fmt.Println(len(forge.Attempts(hook)), "attempts in the log")
	// Output:
	// true push
	// 2 attempts in the log
}
