// Package goname holds the generator's naming rule, for the packages that
// must spell a Go name as package gen does: gen itself, the schema importer
// and the inspector, which shows the payload type of a delivery without
// importing gen (or the generated package).
package goname

import (
	"strings"
	"unicode"
)

// Words splits s into words, keeping their case: at every rune that is not a
// letter or a digit, and before an upper-case letter that follows a
// lower-case one ("node_id" → node, id; "pullRequest" → pull, Request).
func Words(s string) []string { return split(s, false) }

// TitleWords is Words that also splits a run of capitals before its last one
// when a lower-case letter follows ("HTMLParser" → HTML, Parser): for titles
// and component names written as prose.
func TitleWords(s string) []string { return split(s, true) }

func split(s string, title bool) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) ||
			title && i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// initialisms are the words written in capitals in Go names: Go's own list, plus
// those the forge's payloads use (SHA, SSH, GPG, SAML, LDAP, SPDX, ...).
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

// Word spells one word of a Go name: an initialism in capitals ("url" →
// "URL"), the plural of one the Go way ("ids" → "IDs"), any other word
// capitalised ("state" → "State").
func Word(w string) string {
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

// Join spells words as one exported name, each with Word ("html", "url" →
// "HTMLURL").
func Join(words []string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString(Word(w))
	}
	return b.String()
}
