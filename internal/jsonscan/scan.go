// Package jsonscan validates a webhook payload and finds its top-level "action"
// in a single pass over the bytes, without decoding the payload.
//
// Scan accepts exactly what encoding/json accepts (json.Valid): RFC 8259's
// grammar, the same nesting limit, and strings that may hold invalid UTF-8. The
// action it reports is what decoding the payload into a map[string]json.RawMessage
// and its "action" member into a string would give: the last duplicate key wins,
// escaped keys count, escapes are decoded, and invalid UTF-8 becomes U+FFFD.
package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
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

// Result locates the top-level "action" string inside the scanned bytes. The
// zero Result has no action.
type Result struct {
	start, end int  // the value's bytes, between its quotes
	found      bool // a top-level "action" member with a string value
	decode     bool // the value holds escapes or invalid UTF-8
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
	return appendUnquoted(make([]byte, 0, len(raw)+utf8.UTFMax), raw)
}

// String returns the decoded action, or "" when there is none. data must be the
// slice that was scanned.
func (r Result) String(data []byte) string {
	return string(r.Bytes(data))
}

// Scan checks that data is exactly one JSON object, with optional white space
// around it, and locates its top-level "action" string. Invalid JSON gives a
// *SyntaxError; valid JSON of another kind gives an error wrapping ErrNotObject.
// Scan does not allocate, except for the error.
func Scan(data []byte) (Result, error) {
	res, err := scan(data)
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

func scan(data []byte) (Result, error) {
	var (
		res        Result
		stack      bitStack
		n          = len(data)
		actionNext bool // the value about to be scanned is the top level's "action"
		err        error
	)
	i := skipSpace(data, 0)
	if i == n {
		return res, &SyntaxError{i, "unexpected end of JSON input"}
	}
	first := data[i]
	for {
		// i is at the first byte of a value.
		if i >= n {
			return res, &SyntaxError{i, "unexpected end of JSON input"}
		}
		if actionNext && data[i] != '"' {
			// The last "action" is not a string: decoding it into a string gives "".
			res = Result{}
		}
		want := actionNext
		actionNext = false
		switch c := data[i]; {
		case c == '{':
			if !stack.push(false) {
				return res, &SyntaxError{i, "exceeded max depth"}
			}
			i = skipSpace(data, i+1)
			if i < n && data[i] == '}' {
				stack.pop()
				i++
				break
			}
			if i, actionNext, err = member(data, i, stack.depth == 1); err != nil {
				return res, err
			}
			continue
		case c == '[':
			if !stack.push(true) {
				return res, &SyntaxError{i, "exceeded max depth"}
			}
			i = skipSpace(data, i+1)
			if i < n && data[i] == ']' {
				stack.pop()
				i++
				break
			}
			continue
		case c == '"':
			start := i + 1
			if i, err = scanString(data, start); err != nil {
				return res, err
			}
			if want {
				v := data[start : i-1]
				res = Result{start: start, end: i - 1, found: true, decode: needsDecode(v)}
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, err = scanNumber(data, i); err != nil {
				return res, err
			}
		case c == 't':
			i, err = literal(data, i, "true")
		case c == 'f':
			i, err = literal(data, i, "false")
		case c == 'n':
			i, err = literal(data, i, "null")
		default:
			return res, &SyntaxError{i, fmt.Sprintf("invalid character %s looking for beginning of value", quoteChar(c))}
		}
		if err != nil {
			return res, err
		}
		// After a value: close containers until a ',' starts the next value.
	after:
		for {
			i = skipSpace(data, i)
			if stack.depth == 0 {
				if i != n {
					return res, &SyntaxError{i, fmt.Sprintf("invalid character %s after top-level value", quoteChar(data[i]))}
				}
				if first != '{' {
					return Result{}, &NotObjectError{Kind: kind(first)}
				}
				return res, nil
			}
			if i >= n {
				return res, &SyntaxError{i, "unexpected end of JSON input"}
			}
			inArray := stack.top()
			switch c := data[i]; {
			case c == ',':
				i = skipSpace(data, i+1)
				if !inArray {
					if i, actionNext, err = member(data, i, stack.depth == 1); err != nil {
						return res, err
					}
				}
				break after
			case c == '}' && !inArray, c == ']' && inArray:
				stack.pop()
				i++
			default:
				where := "object key-value pair"
				if inArray {
					where = "array element"
				}
				return res, &SyntaxError{i, fmt.Sprintf("invalid character %s after %s", quoteChar(c), where)}
			}
		}
	}
}

// member scans an object key, the white space around it and the colon, and
// returns the offset of the member's value. top says the object is the
// top-level one, where the key is compared with "action".
func member(data []byte, i int, top bool) (next int, isAction bool, err error) {
	if i >= len(data) {
		return i, false, &SyntaxError{i, "unexpected end of JSON input"}
	}
	if data[i] != '"' {
		return i, false, &SyntaxError{i, fmt.Sprintf("invalid character %s looking for beginning of object key string", quoteChar(data[i]))}
	}
	start := i + 1
	if i, err = scanString(data, start); err != nil {
		return i, false, err
	}
	if top {
		isAction = isActionKey(data[start : i-1])
	}
	i = skipSpace(data, i)
	if i >= len(data) {
		return i, false, &SyntaxError{i, "unexpected end of JSON input"}
	}
	if data[i] != ':' {
		return i, false, &SyntaxError{i, fmt.Sprintf("invalid character %s after object key", quoteChar(data[i]))}
	}
	return skipSpace(data, i+1), isAction, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// stopMask flags (in each byte's high bit) the bytes of x that end a plain run of
// string content: '"', '\\' and control bytes below 0x20. The lowest flag is
// exact; higher ones may be spurious, which is why only the lowest is used.
//
// A term's borrow only moves up from a byte that term flags, and no term flags
// a byte below 0x80 that is not one of those, so excluding the bytes of 0x80
// and above once, at the end, is enough (three operations fewer per word than
// excluding them in each term).
func stopMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((x - ones*0x20) | (q - ones) | (b - ones)) &^ x & highs
}

// scanString scans a string's content from i (just past the opening quote) and
// returns the offset just past the closing quote. Bytes of 0x20 and above are
// taken as they are, invalid UTF-8 included, as encoding/json does.
func scanString(data []byte, i int) (int, error) {
	n := len(data)
	for {
		i = skipPlain(data, i)
		if i >= n {
			return i, &SyntaxError{i, "unexpected end of JSON input"}
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= n {
				return n, &SyntaxError{n, "unexpected end of JSON input"}
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= n {
						return n, &SyntaxError{n, "unexpected end of JSON input"}
					}
					if unhex(data[k]) < 0 {
						return k, &SyntaxError{k, fmt.Sprintf("invalid character %s in \\u hexadecimal character escape", quoteChar(data[k]))}
					}
				}
				i += 6
			default:
				return i + 1, &SyntaxError{i + 1, fmt.Sprintf("invalid character %s in string escape code", quoteChar(data[i+1]))}
			}
		default: // c < 0x20
			return i, &SyntaxError{i, fmt.Sprintf("invalid character %s in string literal", quoteChar(c))}
		}
	}
}

// skipPlain returns the offset of the first byte at or after i that ends plain
// string content ('"', '\\' or a control byte), or len(data). It looks at
// sixteen bytes per step, then eight, then one: one branch per sixteen bytes
// for long strings (URLs, bodies), which profiles show dominate the scan.
func skipPlain(data []byte, i int) int {
	n := len(data)
	for i+16 <= n {
		lo := stopMask(binary.LittleEndian.Uint64(data[i:]))
		hi := stopMask(binary.LittleEndian.Uint64(data[i+8:]))
		if lo|hi != 0 {
			if lo != 0 {
				return i + bits.TrailingZeros64(lo)>>3
			}
			return i + 8 + bits.TrailingZeros64(hi)>>3
		}
		i += 16
	}
	for i+8 <= n {
		if m := stopMask(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < n && plain[data[i]] {
		i++
	}
	return i
}

// plain holds the bytes a string may hold without an escape.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func scanNumber(data []byte, i int) (int, error) {
	n := len(data)
	digits := func(i int) (int, error) {
		if i >= n {
			return i, &SyntaxError{i, "unexpected end of JSON input"}
		}
		if data[i] < '0' || data[i] > '9' {
			return i, &SyntaxError{i, fmt.Sprintf("invalid character %s in numeric literal", quoteChar(data[i]))}
		}
		for i < n && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i, nil
	}
	if data[i] == '-' {
		i++
	}
	var err error
	if i < n && data[i] == '0' {
		i++
	} else if i, err = digits(i); err != nil {
		return i, err
	}
	if i < n && data[i] == '.' {
		if i, err = digits(i + 1); err != nil {
			return i, err
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i, err = digits(i); err != nil {
			return i, err
		}
	}
	return i, nil
}

func literal(data []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(data) {
			return i + k, &SyntaxError{i + k, "unexpected end of JSON input"}
		}
		if data[i+k] != lit[k] {
			return i + k, &SyntaxError{i + k, fmt.Sprintf("invalid character %s in literal %s (expecting %s)", quoteChar(data[i+k]), lit, quoteChar(lit[k]))}
		}
	}
	return i + len(lit), nil
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7f:
		return fmt.Sprintf("%#02x", c)
	}
	return "'" + string(rune(c)) + "'"
}

func kind(first byte) string {
	switch first {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// bitStack records, per open container, whether it is an array, in a fixed
// array so that scanning never allocates.
type bitStack struct {
	depth int
	bits  [(MaxDepth + 63) / 64]uint64
}

func (s *bitStack) push(array bool) bool {
	if s.depth == MaxDepth {
		return false
	}
	w, b := s.depth/64, uint(s.depth%64)
	if array {
		s.bits[w] |= 1 << b
	} else {
		s.bits[w] &^= 1 << b
	}
	s.depth++
	return true
}

func (s *bitStack) pop() { s.depth-- }

func (s *bitStack) top() (array bool) {
	d := s.depth - 1
	return s.bits[d/64]>>(uint(d%64))&1 == 1
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

// isActionKey reports whether a key's raw content decodes to "action".
func isActionKey(raw []byte) bool {
	const want = "action"
	if string(raw) == want {
		return true
	}
	if len(raw) <= len(want) { // an escape makes the raw form longer
		return false
	}
	k := 0
	for i := 0; i < len(raw); {
		r, next := nextRune(raw, i)
		if k >= len(want) || r != rune(want[k]) {
			return false
		}
		k++
		i = next
	}
	return k == len(want)
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

// appendUnquoted appends the decoded form of a string's raw content to dst.
func appendUnquoted(dst, raw []byte) []byte {
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
