package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"forgehooks.dev/forgehooks/payloads"
)

func cmdEvents(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "events", "forgehooks events [--json] [PREFIX]", `
Print every event name and event.action name the schema knows, one per line
(sorted by event, each followed by its actions), or as a JSON array. With
PREFIX, only the names that start with it: 'forgehooks events issues.' lists
the actions of issues. No name matching PREFIX exits 1.`)
	asJSON := fs.Bool("json", false, "print a JSON array")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 1 {
		return fs.usageError("one PREFIX at most, got %d arguments", len(pos))
	}
	names := payloads.EmitterEventNames()
	if len(pos) == 1 {
		prefix := pos[0]
		var kept []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				kept = append(kept, n)
			}
		}
		if len(kept) == 0 {
			return fs.fail("no event name starts with %q: 'forgehooks events' lists them all", prefix)
		}
		names = kept
	}
	if *asJSON {
		b, _ := json.Marshal(names)
		fmt.Fprintf(c.stdout, "%s\n", b)
		return exitOK
	}
	for _, n := range names {
		fmt.Fprintln(c.stdout, n)
	}
	return exitOK
}
