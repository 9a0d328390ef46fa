// Package clip shortens request values (headers, delivery ids, event names)
// before they are logged or put into an error, so that a request carrying a
// megabyte of header bytes costs a few kilobytes of log, not megabytes.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one value that String keeps: enough for any value
// the forge sends.
const Max = 256

// String returns s cut to Max bytes (at a rune boundary, when s is valid
// UTF-8) followed by a marker that gives its length, or s itself when it is
// short enough.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	cut := Max
	for cut > Max-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated; " + strconv.Itoa(len(s)) + " bytes]"
}
