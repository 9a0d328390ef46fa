// Package jsonscan is the module's JSON lexer (lex.go: the tokens, shared with
// package payloads' decoder) and its one-pass validator: Scan validates a
// webhook payload and finds its top-level "action", and Lookup finds members
// two levels deep, in a single pass over the bytes, without decoding the
// payload.
//
// Scan accepts exactly what encoding/json accepts (json.Valid): RFC 8259's
// grammar, the same nesting limit, and strings that may hold invalid UTF-8. The
// action it reports is what decoding the payload into a map[string]json.RawMessage
// and its "action" member into a string would give: the last duplicate key wins,
// escaped keys count, escapes are decoded, and invalid UTF-8 becomes U+FFFD.
package jsonscan

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/internal/clip"
)

// MaxDepth is the deepest nesting accepted, encoding/json's limit.
const MaxDepth = 10000

// ErrNotObject is wrapped by Scan's error for valid JSON that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// NotObjectError is Scan's error for valid JSON that is not an object. It
// matches ErrNotObject with errors.Is.
type NotObjectError struct {
	// Kind is what the JSON is: "array", "string", "number", "boolean" or "null".
	Kind string
}

// Error names the kind of JSON found.
func (e *NotObjectError) Error() string { return "not a JSON object: a JSON " + e.Kind }

// Is reports whether target is ErrNotObject.
func (e *NotObjectError) Is(target error) bool { return target == ErrNotObject }

// SyntaxError describes invalid JSON.
type SyntaxError struct {
	// Offset is the byte offset in the input where the error was found.
	Offset int
	// Msg says what is wrong.
	Msg string
}

// Error returns the message and the offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON: %s at offset %d", e.Msg, e.Offset)
}

// Result locates what Scan or Lookup found inside the scanned bytes: a string
// (Scan's top-level "action"), or, for Lookup, a number. The zero Result has
// found nothing.
type Result struct {
	start, end int  // the value's bytes: a string's between its quotes, or a number's
	found      bool // a string was found
	number     bool // a number was found (then found is false)
	decode     bool // the string holds escapes or invalid UTF-8
}

// Found reports whether the object has a top-level "action" member whose value
// is a string (possibly empty).
func (r Result) Found() bool { return r.found }

// Bytes returns the decoded action, or nil when there is none. data must be the
// slice that was scanned. When no decoding is needed the result aliases data and
// nothing is allocated.
func (r Result) Bytes(data []byte) []byte {
	if !r.found {
		return nil
	}
	raw := data[r.start:r.end:r.end]
	if !r.decode {
		return raw
	}
	return AppendUnquoted(make([]byte, 0, len(raw)+utf8.UTFMax), raw)
}

// String returns the decoded action, or "" when there is none. data must be the
// slice that was scanned.
func (r Result) String(data []byte) string {
	return string(r.Bytes(data))
}

// Int64 returns the number found, when it is an integer in int64's range
// (written without a fraction or an exponent, as the forge writes ids). data
// must be the slice that was scanned.
func (r Result) Int64(data []byte) (int64, bool) {
	if !r.number {
		return 0, false
	}
	return ParseInt64(data[r.start:r.end])
}

// ParseInt64 parses the text of a JSON number that is an integer in int64's
// range, written without a fraction or an exponent; ok is false for any
// other text.
func ParseInt64(b []byte) (v int64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// actionPath is Scan's one path: the top-level "action" member itself.
var actionPath = []Path{{"action"}}

// Scan checks that data is exactly one JSON object, with optional white space
// around it, and locates its top-level "action" string. Invalid JSON gives a
// *SyntaxError; valid JSON of another kind gives an error wrapping ErrNotObject.
// Scan does not allocate, except for the error.
func Scan(data []byte) (Result, error) {
	var res [1]Result
	if err := walk(data, actionPath, 1, res[:]); err != nil {
		return Result{}, err
	}
	if !res[0].found {
		return Result{}, nil
	}
	return res[0], nil
}

// needsDecode reports whether a string's raw content differs from its decoded
// form: it holds an escape or invalid UTF-8.
func needsDecode(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' {
			return true
		}
	}
	return !utf8.Valid(raw)
}

// nextRune decodes one character of a string's raw content (already known to be
// valid JSON) at i and returns it with the offset of the next one, as
// encoding/json decodes: escapes are resolved, a \u surrogate pair becomes one
// rune, a lone surrogate and each byte of invalid UTF-8 become U+FFFD.
func nextRune(raw []byte, i int) (rune, int) {
	c := raw[i]
	if c < utf8.RuneSelf && c != '\\' {
		return rune(c), i + 1
	}
	if c != '\\' {
		r, size := utf8.DecodeRune(raw[i:])
		return r, i + size // an invalid byte gives RuneError, size 1
	}
	switch e := raw[i+1]; e {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(raw[i+2 : i+6])
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
			if pair := utf16.DecodeRune(r, hex4(raw[i+2:i+6])); pair != utf8.RuneError {
				return pair, i + 6
			}
		}
		return utf8.RuneError, i
	default: // '"', '\\', '/'
		return rune(e), i + 2
	}
}

// AppendUnquoted appends the decoded form of a string's content (raw, between
// its quotes, already checked by String) to dst, as encoding/json decodes:
// escapes are resolved, a \u surrogate pair becomes one rune, a lone
// surrogate and each byte of invalid UTF-8 become U+FFFD.
func AppendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r = r<<4 | rune(unhex(c))
	}
	return r
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// InvalidPayload is the error of a delivery whose payload Scan refused with
// err: it wraps sentinel (emitter.ErrInvalidPayload), names the event and the
// delivery (clipped), and says what the payload is instead of an object, or
// wraps Scan's *SyntaxError. The emitter and the middleware, which checks a
// payload before an inbox stores it, say it alike.
func InvalidPayload(sentinel error, event, id string, err error) error {
	var no *NotObjectError
	if errors.As(err, &no) {
		return fmt.Errorf("%w (event %q, delivery %q): it is a JSON %s", sentinel, clip.String(event), clip.String(id), no.Kind)
	}
	return fmt.Errorf("%w (event %q, delivery %q): %w", sentinel, clip.String(event), clip.String(id), err)
}
