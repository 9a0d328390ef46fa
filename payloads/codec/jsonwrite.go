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

// Encoder writes JSON for the generated encode functions. The first error sticks and
// is what MarshalJSON returns; writing goes on harmlessly after it.
type Encoder struct {
	buf []byte
	err error
}

func (e *Encoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// An object is written as its members, each after a comma, from the offset
// OpenObject returns; CloseObject then turns the first comma into the '{'.
// The members need not know whether one was written before them, so that a
// member costs its key's bytes and its value, and no test.

// OpenObject starts an object and returns the offset CloseObject needs.
func (e *Encoder) OpenObject() int { return len(e.buf) }

// CloseObject ends the object started at mark. It stays a call, as Key does.
//
//go:noinline
func (e *Encoder) CloseObject(mark int) {
	if len(e.buf) == mark {
		e.buf = append(e.buf, '{', '}')
		return
	}
	e.buf[mark] = '{'
	e.buf = append(e.buf, '}')
}

// Key writes a member's key; k is the comma, the key quoted and the colon
// (`,"name":`), as the generated code has it in constants. It is kept a call:
// inlined, its append would be repeated at each of the generated code's
// thousands of members, and compiling them costs more than the calls do
// (encoding is not on a delivery's path).
//
//go:noinline
func (e *Encoder) Key(k string) {
	e.buf = append(e.buf, k...)
}

// keyString writes a key known only at run time (map keys, unknown members).
func (e *Encoder) keyString(k string) {
	e.buf = append(e.buf, ',')
	e.str(k)
	e.buf = append(e.buf, ':')
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string escaped as encoding/json does by default: HTML
// characters and U+2028/U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func (e *Encoder) str(s string) {
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

// The scalar encoders stay calls, as Key does, for the same reason.

// EncString writes *v as a JSON string.
//
//go:noinline
func EncString(v *string, e *Encoder) { e.str(*v) }

// EncBool writes *v as true or false.
//
//go:noinline
func EncBool(v *bool, e *Encoder) { e.buf = strconv.AppendBool(e.buf, *v) }

// EncInt64 writes *v as a JSON integer.
//
//go:noinline
func EncInt64(v *int64, e *Encoder) { e.buf = strconv.AppendInt(e.buf, *v, 10) }

// EncFloat64 writes a float as encoding/json does, so that the text is the
// shortest that reads back as the same value.
func EncFloat64(v *float64, e *Encoder) {
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

// EncRaw writes a raw value. A decoded one is valid already; one set in Go is
// checked, so that MarshalJSON never writes invalid JSON. nil writes null.
func EncRaw(v *json.RawMessage, e *Encoder) {
	if len(*v) == 0 {
		e.buf = append(e.buf, "null"...)
		return
	}
	d := Decoder{buf: *v}
	if err := d.skip(); err != nil || d.end() != nil {
		e.fail(encodeErrorf("json.RawMessage is not valid JSON: %q", string(*v)))
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, *v...)
}

// EncPtr writes *v, which the generated code has checked to be non-nil, or null.
func EncPtr[T any](v **T, e *Encoder, enc func(*T, *Encoder)) {
	if *v == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	enc(*v, e)
}

// PtrEnc makes an encoder of *T from one of T, for elements that may be nil.
func PtrEnc[T any](enc func(*T, *Encoder)) func(**T, *Encoder) {
	return func(v **T, e *Encoder) { EncPtr(v, e, enc) }
}

// EncSlice writes an array; a nil slice is written as [] (the generated code
// leaves out an absent member before getting here).
func EncSlice[T any](v *[]T, e *Encoder, enc func(*T, *Encoder)) {
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

// SliceEnc makes an encoder of []T from one of T, for nested collections.
func SliceEnc[T any](enc func(*T, *Encoder)) func(*[]T, *Encoder) {
	return func(v *[]T, e *Encoder) { EncSlice(v, e, enc) }
}

// EncMap writes an object with the keys sorted, so that output is deterministic.
func EncMap[T any](v *map[string]T, e *Encoder, enc func(*T, *Encoder)) {
	m := *v
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mark := e.OpenObject()
	for _, k := range keys {
		e.keyString(k)
		val := m[k]
		enc(&val, e)
	}
	e.CloseObject(mark)
}

// MapEnc makes an encoder of map[string]T from one of T, for nested collections.
func MapEnc[T any](enc func(*T, *Encoder)) func(*map[string]T, *Encoder) {
	return func(v *map[string]T, e *Encoder) { EncMap(v, e, enc) }
}

// NewEncoder returns an Encoder for one MarshalJSON call.
func NewEncoder() *Encoder { return &Encoder{buf: make([]byte, 0, 1024)} }

// Result is what MarshalJSON returns.
func (e *Encoder) Result() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.buf, nil
}

// marshal runs an encode function for MarshalJSON.
func marshal(enc func(*Encoder)) ([]byte, error) {
	e := NewEncoder()
	enc(e)
	return e.Result()
}
