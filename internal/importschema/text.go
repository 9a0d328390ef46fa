package importschema

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
	admonition = regexp.MustCompile(`^>\s*\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$`)
)

// cleanText prepares a spec description for our docs: markdown links keep their
// text only (their targets are the forge's own documentation), and the forge's
// brand becomes "forge", as our docs always say.
func cleanText(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	s = admonitionsAsProse(s)
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

// admonitionsAsProse turns the spec's admonition blocks ("> [!NOTE]" and the
// quoted lines after it) into a paragraph that starts with the admonition's
// word ("Note: ..."): godoc shows Markdown markup as it is, so the block would
// otherwise read as stray ">" and "[!NOTE]".
func admonitionsAsProse(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0:0]
	for i := 0; i < len(lines); i++ {
		m := admonition.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		word := m[1][:1] + strings.ToLower(m[1][1:]) + ":"
		var body []string
		for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), ">") {
			i++
			if l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), ">")); l != "" {
				body = append(body, l)
			}
		}
		out = append(out, strings.Join(append([]string{word}, body...), " "))
	}
	return strings.Join(out, "\n")
}
