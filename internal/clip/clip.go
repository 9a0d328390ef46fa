// Package clip shortens request values (headers, delivery ids, event names)
// before they are logged or put into an error, so that a request carrying a
// megabyte of header bytes costs a few hundred bytes of log, not megabytes.
package clip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is the most bytes of one value that String keeps: enough for any value
// the forge sends.
const Max = 256

// String returns s when it is valid UTF-8 of at most Max bytes. Otherwise it
// returns s cut to Max bytes (at a rune boundary), each run of bytes that are
// not UTF-8 replaced by one U+FFFD (a log handler would escape each such byte
// into four to six), and, when it was cut, a marker that gives its length.
func String(s string) string {
	if len(s) <= Max && utf8.ValidString(s) {
		return s
	}
	cut := min(len(s), Max)
	for cut < len(s) && cut > Max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	out := strings.ToValidUTF8(s[:cut], "\uFFFD")
	if cut < len(s) {
		out += "…[truncated; " + strconv.Itoa(len(s)) + " bytes]"
	}
	return out
}
