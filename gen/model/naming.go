package model

import (
	"fmt"
	"strings"
	"unicode"

	"forgehooks.dev/forgehooks/internal/goname"
)

// GoName turns a JSON key or an event or action name into an exported Go name:
// words split at '_', '-', '.', ' ' and lower-to-upper case changes, each word
// capitalised, initialisms in capitals ("html_url" → "HTMLURL", "node_id" →
// "NodeID", "_links" → "Links", "+1" → "Plus1"). It fails for a key that yields
// no name or one that would not be exported (starting with a digit, or with a
// letter that has no upper case, such as "ß" or "中"); the schema then gives
// Field.Name.
func GoName(s string) (string, error) {
	var words []string
	rest := s
	switch {
	case strings.HasPrefix(s, "+"):
		words, rest = []string{"plus"}, s[1:]
	case strings.HasPrefix(s, "-"):
		words, rest = []string{"minus"}, s[1:]
	}
	name := goname.Join(append(words, goname.Words(rest)...))
	if name == "" || !unicode.IsUpper([]rune(name)[0]) {
		return "", fmt.Errorf("%q gives no exported Go name (%q): the schema must give one", s, name)
	}
	return name, nil
}

// GoWord spells one word of a Go name: an initialism in capitals ("url" → "URL"),
// the plural of one the Go way ("ids" → "IDs"), any other word capitalised
// ("state" → "State").
func GoWord(w string) string { return goname.Word(w) }
