package gen

import (
	"fmt"
	"strings"
	"unicode"
)

// initialisms are the words written in capitals in Go names: Go's own list, plus
// those the forge's payloads use (SHA, SSH, GPG, SAML, LDAP, SPDX, ...). The
// importer names types with the same list (GoWord), so that a type and a field
// spell a word alike.
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CI": true, "CPU": true, "CSS": true,
	"CVE": true, "CVSS": true, "CWE": true, "DN": true, "DNS": true, "EOF": true,
	"EPSS": true, "GHSA": true, "GPG": true, "GUID": true, "HTML": true, "HTTP": true,
	"HTTPS": true, "ID": true, "IP": true, "JSON": true, "JWT": true, "LDAP": true,
	"LHS": true, "MD5": true, "OID": true, "OS": true, "QPS": true, "RAM": true,
	"RHS": true, "RPC": true, "SAML": true, "SARIF": true, "SHA": true, "SHA1": true,
	"SHA256": true, "SLA": true, "SMTP": true, "SPDX": true, "SQL": true, "SSH": true,
	"SSL": true, "SSO": true, "TCP": true, "TLS": true, "TTL": true, "UDP": true,
	"UI": true, "UID": true, "URI": true, "URL": true, "UTF8": true, "UUID": true,
	"VM": true, "XML": true, "XMPP": true, "XSRF": true, "XSS": true,
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
		b.WriteString(GoWord(w))
	}
	name := b.String()
	if name == "" || !unicode.IsLetter([]rune(name)[0]) {
		return "", fmt.Errorf("%q gives no Go name (%q): the schema must give one", s, name)
	}
	return name, nil
}

// GoWord spells one word of a Go name: an initialism in capitals ("url" → "URL"),
// the plural of one the Go way ("ids" → "IDs"), any other word capitalised
// ("state" → "State").
func GoWord(w string) string {
	up := strings.ToUpper(w)
	if p := initialismPlurals[up]; p != "" {
		return p
	}
	if initialisms[up] {
		return up
	}
	r := []rune(strings.ToLower(w))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}
