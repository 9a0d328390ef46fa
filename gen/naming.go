package gen

import (
	"fmt"
	"strings"
	"unicode"
)

// initialisms are the words written in capitals in Go names (Go's own list, plus
// those the forge's payloads use: SHA, SSH, GPG, SSO, SAML, ...).
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CI": true, "CPU": true, "CSS": true,
	"CVE": true, "CVSS": true, "CWE": true, "DNS": true, "EOF": true, "GHSA": true,
	"GPG": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true,
	"IP": true, "JSON": true, "JWT": true, "LHS": true, "OS": true,
	"QPS": true, "RAM": true, "RHS": true, "RPC": true, "SAML": true, "SARIF": true,
	"SHA": true, "SLA": true, "SMTP": true, "SQL": true, "SSH": true, "SSO": true,
	"TCP": true, "TLS": true, "TTL": true, "UDP": true, "UI": true, "UID": true,
	"URI": true, "URL": true, "UTF8": true, "UUID": true, "VM": true,
	"XML": true, "XMPP": true, "XSRF": true, "XSS": true,
}

// initialismPlurals spell plurals of initialisms the Go way (IDs, URLs).
var initialismPlurals = map[string]string{"IDS": "IDs", "URLS": "URLs"}

// GoName turns a JSON key or an event or action name into an exported Go name:
// words split at '_', '-', '.', ' ' and lower-to-upper case changes, each word
// capitalised, initialisms in capitals ("html_url" → "HTMLURL", "node_id" →
// "NodeID", "_links" → "Links", "+1" → "Plus1"). It fails for a key that yields
// no name or one starting with a digit; the schema then gives Field.Name.
func GoName(s string) (string, error) {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '+' && i == 0:
			words = append(words, "plus")
		case r == '-' && i == 0:
			words = append(words, "minus")
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		up := strings.ToUpper(w)
		switch {
		case initialismPlurals[up] != "":
			b.WriteString(initialismPlurals[up])
		case initialisms[up]:
			b.WriteString(up)
		default:
			r := []rune(strings.ToLower(w))
			r[0] = unicode.ToUpper(r[0])
			b.WriteString(string(r))
		}
	}
	name := b.String()
	if name == "" || !unicode.IsLetter([]rune(name)[0]) {
		return "", fmt.Errorf("%q gives no Go name (%q): the schema must give one", s, name)
	}
	return name, nil
}
