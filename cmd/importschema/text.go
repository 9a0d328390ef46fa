package main

import (
	"regexp"
	"strings"
)

var (
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)\)`)
	brandHost  = regexp.MustCompile(`(?i)(?:https?://)?\b(?:[a-z0-9-]+\.)*github\.com\b(/[^\s)"'\x60]*)?`)
	brandWord  = regexp.MustCompile(`GitHub|Github`)
	brandHdr   = regexp.MustCompile(`(?i)X-GitHub-`)
	articleEnd = regexp.MustCompile(`(?i)(?:^|\s)(a|an|the|your|their|our|its)\s$`)
	sentEnd    = regexp.MustCompile(`(?:^|[.!?>:]\s+|\n\s*)$`)
	spaces     = regexp.MustCompile(`[ \t]+\n`)
)

// cleanText prepares a spec description for our docs: markdown links keep their
// text only (their targets are the forge's own documentation), and the forge's
// brand becomes "forge", as our docs always say.
func cleanText(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	s = mdLink.ReplaceAllString(s, "$1")
	s = brandHdr.ReplaceAllString(s, "X-Forge-")
	s = brandHost.ReplaceAllString(s, "the forge")
	var b strings.Builder
	last := 0
	for _, loc := range brandWord.FindAllStringIndex(s, -1) {
		before := s[:loc[0]]
		after := s[loc[1]:]
		b.WriteString(s[last:loc[0]])
		last = loc[1]
		switch {
		case articleEnd.MatchString(before),
			strings.HasPrefix(after, "-"),
			len(after) > 1 && after[0] == ' ' && after[1] >= 'A' && after[1] <= 'Z':
			b.WriteString("forge")
		case sentEnd.MatchString(before):
			b.WriteString("The forge")
		default:
			b.WriteString("the forge")
		}
	}
	b.WriteString(s[last:])
	return spaces.ReplaceAllString(b.String(), "\n")
}
