package payloads

import (
	"encoding/json"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// encoder writes JSON for the generated encode methods. The first error sticks and
// is what MarshalJSON returns; writing goes on harmlessly after it.
type encoder struct {
	buf []byte
	err error
}

func (e *encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// An object is written as its members, each after a comma, from the offset
// openObject returns; closeObject then turns the first comma into the '{'.
// The members need not know whether one was written before them, so that a
// member costs its key's bytes and its value, and no test.

// openObject starts an object and returns the offset closeObject needs.
func (e *encoder) openObject() int { return len(e.buf) }

// closeObject ends the object started at mark. It stays a call, as key does.
//
//go:noinline
func (e *encoder) closeObject(mark int) {
	if len(e.buf) == mark {
		e.buf = append(e.buf, '{', '}')
		return
	}
	e.buf[mark] = '{'
	e.buf = append(e.buf, '}')
}

// key writes a member's key; k is the comma, the key quoted and the colon
// (`,"name":`), as the generated code has it in constants. It is kept a call:
// inlined, its append would be repeated at each of the generated code's
// thousands of members, and compiling them costs more than the calls do
// (encoding is not on a delivery's path).
//
//go:noinline
func (e *encoder) key(k string) {
	e.buf = append(e.buf, k...)
}

// keyString writes a key known only at run time (map keys, unknown members).
func (e *encoder) keyString(k string) {
	e.buf = append(e.buf, ',')
	e.str(k)
	e.buf = append(e.buf, ':')
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string escaped as encoding/json does by default: HTML
// characters and U+2028/U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func (e *encoder) str(s string) {
	b := append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time through what needs no escape (the profile of
		// MarshalJSON is mostly this loop).
		for i+8 <= len(s) {
			if m := escMask(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.buf = append(b, '"')
}

// escMask flags (in each byte's high bit) the bytes of x that str cannot copy as
// they are: control bytes, '"', '\\', '<', '>', '&', and bytes of 0x80 and
// above (checked one rune at a time). The lowest flag is exact; higher ones may
// be spurious, so only the lowest is used.
func escMask(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	m := jsonscan.StopMask(x)
	for _, c := range [...]uint64{'<', '>', '&'} {
		y := x ^ (ones * c)
		m |= (y - ones) &^ y & highs
	}
	return m
}

// The scalar encoders stay calls, as key does, for the same reason.

//go:noinline
func encString(v *string, e *encoder) { e.str(*v) }

//go:noinline
func encBool(v *bool, e *encoder) { e.buf = strconv.AppendBool(e.buf, *v) }

//go:noinline
func encInt64(v *int64, e *encoder) { e.buf = strconv.AppendInt(e.buf, *v, 10) }

// encFloat64 writes a float as encoding/json does, so that the text is the
// shortest that reads back as the same value.
func encFloat64(v *float64, e *encoder) {
	f := *v
	if math.IsInf(f, 0) || math.IsNaN(f) {
		e.fail(encodeErrorf("unsupported value %v", f))
		e.buf = append(e.buf, '0')
		return
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(e.buf, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.buf = b
}

// encRaw writes a raw value. A decoded one is valid already; one set in Go is
// checked, so that MarshalJSON never writes invalid JSON. nil writes null.
func encRaw(v *json.RawMessage, e *encoder) {
	if len(*v) == 0 {
		e.buf = append(e.buf, "null"...)
		return
	}
	d := decoder{buf: *v}
	if err := d.skip(); err != nil || d.end() != nil {
		e.fail(encodeErrorf("json.RawMessage is not valid JSON: %q", string(*v)))
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, *v...)
}

// encPtr writes *v, which the generated code has checked to be non-nil, or null.
func encPtr[T any](v **T, e *encoder, enc func(*T, *encoder)) {
	if *v == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	enc(*v, e)
}

func ptrEnc[T any](enc func(*T, *encoder)) func(**T, *encoder) {
	return func(v **T, e *encoder) { encPtr(v, e, enc) }
}

// encSlice writes an array; a nil slice is written as [] (the generated code
// leaves out an absent member before getting here).
func encSlice[T any](v *[]T, e *encoder, enc func(*T, *encoder)) {
	e.buf = append(e.buf, '[')
	s := *v
	for i := range s {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		enc(&s[i], e)
	}
	e.buf = append(e.buf, ']')
}

func sliceEnc[T any](enc func(*T, *encoder)) func(*[]T, *encoder) {
	return func(v *[]T, e *encoder) { encSlice(v, e, enc) }
}

// encMap writes an object with the keys sorted, so that output is deterministic.
func encMap[T any](v *map[string]T, e *encoder, enc func(*T, *encoder)) {
	m := *v
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mark := e.openObject()
	for _, k := range keys {
		e.keyString(k)
		val := m[k]
		enc(&val, e)
	}
	e.closeObject(mark)
}

func mapEnc[T any](enc func(*T, *encoder)) func(*map[string]T, *encoder) {
	return func(v *map[string]T, e *encoder) { encMap(v, e, enc) }
}

// newEncoder returns an encoder for one MarshalJSON call.
func newEncoder() *encoder { return &encoder{buf: make([]byte, 0, 1024)} }

// result is what MarshalJSON returns.
func (e *encoder) result() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.buf, nil
}

// marshal runs an encode function for MarshalJSON.
func marshal(enc func(*encoder)) ([]byte, error) {
	e := newEncoder()
	enc(e)
	return e.result()
}
