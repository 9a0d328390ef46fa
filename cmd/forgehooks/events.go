package main

import (
	"context"
	"encoding/json"
	"fmt"

	"forgehooks.dev/forgehooks/payloads"
)

func cmdEvents(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "events", "forgehooks events [--json]", `
Print every event name and event.action name the schema knows, one per line
(sorted by event, each followed by its actions), or as a JSON array.`)
	asJSON := fs.Bool("json", false, "print a JSON array")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	names := payloads.EmitterEventNames()
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
