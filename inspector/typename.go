package inspector

import (
	"strings"
	"unicode"
)

// typeInitialisms are the words the generator writes in capitals that can
// occur in event and action names (package gen holds the full list).
var typeInitialisms = map[string]bool{"API": true, "CI": true, "GPG": true, "ID": true, "SSH": true, "SSO": true, "URL": true}

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

func goName(s string) string {
	var b strings.Builder
	word := func(w []rune) {
		if len(w) == 0 {
			return
		}
		up := strings.ToUpper(string(w))
		if typeInitialisms[up] {
			b.WriteString(up)
			return
		}
		b.WriteRune(unicode.ToUpper(w[0]))
		b.WriteString(strings.ToLower(string(w[1:])))
	}
	var cur []rune
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]) {
				word(cur)
				cur = cur[:0]
			}
			cur = append(cur, r)
		default:
			word(cur)
			cur = cur[:0]
		}
	}
	word(cur)
	return b.String()
}
