package catchup

import (
	"errors"
	"fmt"
	"strings"

	"forgehooks.dev/forgehooks/internal/clip"
)

// maxLinkHeader bounds the Link header parsed: the forge's is a few hundred
// bytes, and a hostile one must not cost more.
const maxLinkHeader = 16 << 10

// parseLink parses an RFC 8288 Link header value into a map from each link's
// rel to its target URL, as the forge sends it to page a list
// (`<https://…?cursor=…>; rel="next", <…>; rel="prev"`). A link with several
// rels ("next last") is recorded under each. An empty header yields an empty
// map. A malformed header (a target not in <>, a parameter without '=', an
// unterminated quote) is an error, so that a bad page never passes for the last.
func parseLink(header string) (map[string]string, error) {
	links := map[string]string{}
	if len(header) > maxLinkHeader {
		return nil, fmt.Errorf("link header of %d bytes is over the %d-byte limit", len(header), maxLinkHeader)
	}
	s := header
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return links, nil
		}
		if s[0] != '<' {
			return nil, fmt.Errorf("link header: want '<' at %q", clip.String(s))
		}
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return nil, errors.New("link header: target without closing '>'")
		}
		target := s[1:end]
		s = s[end+1:]
		var rels []string
		for {
			s = strings.TrimLeft(s, " \t")
			if s == "" || s[0] == ',' {
				break
			}
			if s[0] != ';' {
				return nil, fmt.Errorf("link header: want ';' or ',' at %q", clip.String(s))
			}
			s = strings.TrimLeft(s[1:], " \t")
			eq := strings.IndexAny(s, "=;,")
			if eq < 0 || s[eq] != '=' {
				return nil, fmt.Errorf("link header: parameter without value at %q", clip.String(s))
			}
			name := strings.ToLower(strings.TrimSpace(s[:eq]))
			s = strings.TrimLeft(s[eq+1:], " \t")
			var value string
			if strings.HasPrefix(s, `"`) {
				q := strings.IndexByte(s[1:], '"')
				if q < 0 {
					return nil, errors.New("link header: unterminated quoted value")
				}
				value, s = s[1:1+q], s[2+q:]
			} else {
				n := strings.IndexAny(s, ";, \t")
				if n < 0 {
					n = len(s)
				}
				value, s = s[:n], s[n:]
			}
			if name == "rel" {
				rels = append(rels, strings.Fields(strings.ToLower(value))...)
			}
		}
		for _, rel := range rels {
			if _, dup := links[rel]; !dup {
				links[rel] = target
			}
		}
	}
}
