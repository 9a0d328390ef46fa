package jsonscan

// The lexer: the tokens of RFC 8259, one function each, shared by Scan and
// Lookup here and by package payloads' decoder, so that the forge's JSON is
// read by one set of rules. Each takes the input and an offset and returns
// the offset after what it read; errors are *SyntaxError, with encoding/json's
// wording.

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
)

// SkipSpace returns the offset of the first byte at or after i that is not
// JSON white space, or len(data).
func SkipSpace(data []byte, i int) int {
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

// PlainMask flags (in each byte's high bit) the bytes of x that end a plain run of
// string content: '"', '\\' and control bytes below 0x20. The lowest flag is
// exact; higher ones may be spurious, which is why only the lowest is used.
//
// A term's borrow only moves up from a byte that term flags, and no term flags
// a byte below 0x80 that is not one of those, so excluding the bytes of 0x80
// and above once, at the end, is enough (three operations fewer per word than
// excluding them in each term).
func PlainMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((x - ones*0x20) | (q - ones) | (b - ones)) &^ x & highs
}

// String checks a string's content from i (just past the opening quote) and
// returns the offset just past the closing quote. Bytes of 0x20 and above are
// taken as they are, invalid UTF-8 included, as encoding/json does.
func String(data []byte, i int) (int, error) {
	n := len(data)
	for {
		i = SkipPlain(data, i)
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
						return k, &SyntaxError{k, fmt.Sprintf("invalid character %s in \\u hexadecimal character escape", QuoteChar(data[k]))}
					}
				}
				i += 6
			default:
				return i + 1, &SyntaxError{i + 1, fmt.Sprintf("invalid character %s in string escape code", QuoteChar(data[i+1]))}
			}
		default: // c < 0x20
			return i, &SyntaxError{i, fmt.Sprintf("invalid character %s in string literal", QuoteChar(c))}
		}
	}
}

// SkipPlain returns the offset of the first byte at or after i that ends plain
// string content ('"', '\\' or a control byte), or len(data). It looks at
// sixteen bytes per step, then eight, then one: one branch per sixteen bytes
// for long strings (URLs, bodies), which profiles show dominate the scan.
func SkipPlain(data []byte, i int) int {
	n := len(data)
	for i+16 <= n {
		lo := PlainMask(binary.LittleEndian.Uint64(data[i:]))
		hi := PlainMask(binary.LittleEndian.Uint64(data[i+8:]))
		if lo|hi != 0 {
			if lo != 0 {
				return i + bits.TrailingZeros64(lo)>>3
			}
			return i + 8 + bits.TrailingZeros64(hi)>>3
		}
		i += 16
	}
	for i+8 <= n {
		if m := PlainMask(binary.LittleEndian.Uint64(data[i:])); m != 0 {
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

// Number checks the number that starts at data[i] and returns the offset just
// past it.
func Number(data []byte, i int) (int, error) {
	n := len(data)
	digits := func(i int) (int, error) {
		if i >= n {
			return i, &SyntaxError{i, "unexpected end of JSON input"}
		}
		if data[i] < '0' || data[i] > '9' {
			return i, &SyntaxError{i, fmt.Sprintf("invalid character %s in numeric literal", QuoteChar(data[i]))}
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

// Literal checks that the literal lit (true, false or null) is at data[i] and
// returns the offset just past it.
func Literal(data []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(data) {
			return i + k, &SyntaxError{i + k, "unexpected end of JSON input"}
		}
		if data[i+k] != lit[k] {
			return i + k, &SyntaxError{i + k, fmt.Sprintf("invalid character %s in literal %s (expecting %s)", QuoteChar(data[i+k]), lit, QuoteChar(lit[k]))}
		}
	}
	return i + len(lit), nil
}

// QuoteChar quotes a byte for an error message, as encoding/json does.
func QuoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// StopMask is PlainMask that also flags bytes of 0x80 and above, where a
// decoder checks UTF-8 one rune at a time. Since those bytes are to be
// flagged, the terms need not exclude them (PlainMask's &^ x), and they flag
// them by themselves: x-0x20 flags 0xa0 and above, and q-1 flags 0x80-0x9f
// (q is then 0xa0-0xbf). A term's borrow only moves up from a byte it flags,
// so the lowest flag stays exact.
func StopMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((x - ones*0x20) | (q - ones) | (b - ones)) & highs
}

// SkipASCII returns the offset of the first byte at or after i that StopMask
// flags, or where fewer than eight bytes are left: sixteen bytes per step,
// then eight. The caller looks at the bytes from there one at a time.
func SkipASCII(data []byte, i int) int {
	for i+16 <= len(data) {
		lo, hi := StopMask(binary.LittleEndian.Uint64(data[i:])), StopMask(binary.LittleEndian.Uint64(data[i+8:]))
		if lo|hi != 0 {
			if lo != 0 {
				return i + bits.TrailingZeros64(lo)>>3
			}
			return i + 8 + bits.TrailingZeros64(hi)>>3
		}
		i += 16
	}
	for i+8 <= len(data) {
		if m := StopMask(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}
