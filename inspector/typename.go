package inspector

import "forgehooks.dev/forgehooks/internal/goname"

// deriveTypeName returns the Go type that package payloads decodes an event
// and action to, by the generator's naming rule: words split at '_', '.', '-'
// and case changes, each capitalised, then "Event" — "issues", "opened" →
// "*payloads.IssuesOpenedEvent"; "push", "" → "*payloads.PushEvent". It does
// not know the schema: an event or action the schema lacks decodes to its
// event's UnknownEvent type, which only Options.TypeName (with
// payloads.Parse) can tell.
func deriveTypeName(event, action string) string {
	if event == "" {
		return ""
	}
	return "*payloads." + goName(event) + goName(action) + "Event"
}

// goName spells s as the generator does (see package goname).
func goName(s string) string { return goname.Join(goname.Words(s)) }
