package payloads

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// Decoder reads one JSON document held in memory. The generated decode functions
// walk it directly, without reflection and without building intermediate values,
// so that a payload is read in one pass. Its tokens are internal/jsonscan's
// (the lexer Scan and Lookup use too); what is here is the parser over them,
// and the fast paths that decode a common token where it is recognised.
//
// It follows encoding/json where the two could differ: invalid UTF-8 and lone
// surrogates in strings become U+FFFD, and nesting deeper than maxDepth is an
// error. Object keys match exactly (encoding/json also matches keys case-
// insensitively; a differently-cased key is kept as an unknown member instead, so
// nothing is lost).
type Decoder struct {
	buf     []byte
	pos     int
	depth   int
	scratch []byte // unescaped string values; valid until the next string read
	// actions counts the top-level members whose key is "action", for
	// ParseByAction.
	actions int

	// src is buf as a string, when buf is at most maxShared bytes long:
	// string values without escapes are substrings of it, so that a
	// payload's hundreds of strings cost one allocation instead of one each,
	// or none when the Input was Owned (src is then buf itself). Otherwise
	// it is a copy, made by the first string value decoded.
	src string
	// Slabs that optional scalars point into, so that each does not cost an
	// allocation of its own (see newOf).
	strs   []string
	ints   []int64
	bools  []bool
	floats []float64
	times  []Timestamp
}

// maxShared is the largest document whose string values share one copy of it.
// A decoded payload keeps that copy alive while any of its strings lives, so
// larger documents get a string allocated per value, as encoding/json does,
// and a string kept from a huge delivery does not keep the whole delivery.
const maxShared = 256 << 10

// maxDepth bounds nesting, as encoding/json does, so hostile input cannot exhaust
// the stack.
const maxDepth = 10000

func (d *Decoder) ws() {
	// Every white space byte is below '!': one comparison settles the common
	// case, compact JSON (the profile of a push decode had a tenth of its time
	// here before).
	if d.pos < len(d.buf) && d.buf[d.pos] > ' ' {
		return
	}
	d.pos = jsonscan.SkipSpace(d.buf, d.pos)
}

// peek returns the first byte of the next token, or 0 at the end of the input.
func (d *Decoder) peek() byte {
	d.ws()
	if d.pos < len(d.buf) {
		return d.buf[d.pos]
	}
	return 0
}

// null consumes a null literal and reports whether there was one.
func (d *Decoder) null() bool {
	if d.peek() == 'n' && d.pos+4 <= len(d.buf) && string(d.buf[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

// end checks that nothing but white space follows the document.
func (d *Decoder) end() error {
	if d.ws(); d.pos < len(d.buf) {
		return d.syntaxf("invalid character %s after top-level value", jsonscan.QuoteChar(d.buf[d.pos]))
	}
	return nil
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.syntaxf("exceeded max depth of %d", maxDepth)
	}
	return nil
}

// object reads a JSON object, calling fn once per member with the member's
// unescaped key; fn must read the member's value. An error from fn gets the key
// added to its path. The generated decoders loop with OpenObject and
// NextMember themselves instead, which saves them a closure call per member.
func (d *Decoder) object(fn func(key []byte) error) error {
	key, more, err := d.OpenObject()
	for more {
		if err = fn(key); err != nil {
			return AtKey(err, key)
		}
		key, more, err = d.NextMember()
	}
	return err
}

// OpenObject reads the '{' that starts an object and, when a member follows,
// that member's key and the ':' after it (more is true). The caller reads the
// member's value, then calls NextMember, until more is false:
//
//	key, more, err := d.OpenObject()
//	for more {
//		err = readValue(key) // AtKey(err, key) on failure, and stop
//		key, more, err = d.NextMember()
//	}
func (d *Decoder) OpenObject() (key []byte, more bool, err error) {
	if c := d.peek(); c != '{' {
		return nil, false, d.wrongKind("object")
	}
	if err := d.enter(); err != nil {
		return nil, false, err
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil, false, nil
	}
	key, err = d.memberKey()
	return key, err == nil, err
}

// NextMember reads what follows a member's value: a ',' and the next member's
// Key and ':' (more is true), or the '}' that ends the object.
func (d *Decoder) NextMember() (key []byte, more bool, err error) {
	// The common case, ',' and a plain key right after it, without a call to
	// memberKey.
	if buf, i := d.buf, d.pos; i+1 < len(buf) && buf[i] == ',' && buf[i+1] == '"' {
		if j := stopAt(buf, i+2); j >= 0 && buf[j] == '"' && j+1 < len(buf) && buf[j+1] == ':' {
			d.pos = j + 2
			return d.countAction(buf[i+2 : j]), true, nil
		}
	}
	switch d.peek() {
	case ',':
		d.pos++
		key, err = d.memberKey()
		return key, err == nil, err
	case '}':
		d.pos++
		d.depth--
		return nil, false, nil
	}
	return nil, false, d.unexpected("after object key:value pair")
}

// memberKey reads a member's key and the ':' after it.
func (d *Decoder) memberKey() ([]byte, error) {
	// The common case, compact JSON with a key of plain ASCII, is read here
	// eight bytes per step; anything else (white space, escapes, other bytes)
	// takes the general path below from the same position.
	if buf, i := d.buf, d.pos; i < len(buf) && buf[i] == '"' {
		if j := stopAt(buf, i+1); j >= 0 && buf[j] == '"' && j+1 < len(buf) && buf[j+1] == ':' {
			d.pos = j + 2
			return d.countAction(buf[i+1 : j]), nil
		}
	}
	if d.peek() != '"' {
		return nil, d.unexpected("looking for beginning of object key string")
	}
	key, err := d.Key()
	if err != nil {
		return nil, err
	}
	if d.peek() != ':' {
		return nil, d.unexpected("after object key")
	}
	d.pos++
	return d.countAction(key), nil
}

// stopAt returns the offset of the first byte at or after i that
// jsonscan.StopMask flags, eight bytes per step, or -1 where fewer than eight bytes are left:
// small enough to inline in the key readers.
func stopAt(buf []byte, i int) int {
	for ; i+8 <= len(buf); i += 8 {
		if m := jsonscan.StopMask(binary.LittleEndian.Uint64(buf[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	return -1
}

// countAction counts key when it is a top-level "action", for ParseByAction.
func (d *Decoder) countAction(key []byte) []byte {
	if d.depth == 1 && string(key) == "action" {
		d.actions++
	}
	return key
}

// Key reads an object key. Unlike a string value it never lives in d.scratch: the
// Key must survive the reading of its value, for error paths and unknown members.
func (d *Decoder) Key() ([]byte, error) {
	b, plain, err := d.strBytes()
	if err != nil || plain {
		return b, err
	}
	return append([]byte(nil), b...), nil
}

// openArray reads the '[' that starts an array and reports whether an element
// follows; the caller reads it, then calls nextElement, until more is false
// (the loop of OpenObject, without keys).
func (d *Decoder) openArray() (more bool, err error) {
	if c := d.peek(); c != '[' {
		return false, d.wrongKind("array")
	}
	if err := d.enter(); err != nil {
		return false, err
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return false, nil
	}
	return true, nil
}

// nextElement reads what follows an element: a ',' (more is true) or the ']'
// that ends the array.
func (d *Decoder) nextElement() (more bool, err error) {
	switch d.peek() {
	case ',':
		d.pos++
		return true, nil
	case ']':
		d.pos++
		d.depth--
		return false, nil
	}
	return false, d.unexpected("after array element")
}

// str reads a JSON string and returns its unescaped bytes, which alias d.buf or
// d.scratch and are valid only until the next read.
func (d *Decoder) str() ([]byte, error) {
	b, _, err := d.strBytes()
	return b, err
}

// strBytes reads a JSON string. When its content is the input's own bytes (no
// escape, valid UTF-8), plain is true and b aliases d.buf, ending just before
// the closing quote at d.pos-1; otherwise b is the unescaped content in
// d.scratch, valid until the next read.
func (d *Decoder) strBytes() (b []byte, plain bool, err error) {
	if d.peek() != '"' {
		return nil, false, d.wrongKind("string")
	}
	buf := d.buf
	start := d.pos + 1
	i := start
scan:
	for i < len(buf) {
		i = jsonscan.SkipASCII(buf, i)
		if i >= len(buf) {
			break
		}
		switch c := buf[i]; {
		case c == '"':
			d.pos = i + 1
			return buf[start:i], true, nil
		case c == '\\' || c < 0x20:
			break scan
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				break scan // invalid UTF-8 becomes U+FFFD: not the input's bytes
			}
			i += size
		default:
			i++
		}
	}
	b, err = d.unescape(start)
	return b, false, err
}

// unescape decodes a string's content from start (just past the opening
// quote) into d.scratch: the lexer checks it, then decodes it.
func (d *Decoder) unescape(start int) ([]byte, error) {
	end, err := jsonscan.String(d.buf, start)
	if err != nil {
		return nil, d.lexError(err)
	}
	d.pos = end
	d.scratch = jsonscan.AppendUnquoted(d.scratch[:0], d.buf[start:end-1])
	return d.scratch, nil
}

// lexError is the Decoder's error for one of the lexer's, at its offset.
func (d *Decoder) lexError(err error) error {
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		d.pos = se.Offset
		return d.syntaxf("%s", se.Msg)
	}
	return err
}

// number reads a JSON number and returns its text.
func (d *Decoder) number() ([]byte, error) {
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, d.wrongKind("number")
	}
	start := d.pos
	end, err := jsonscan.Number(d.buf, start)
	if err != nil {
		return nil, d.lexError(err)
	}
	d.pos = end
	return d.buf[start:end], nil
}

// literal consumes the literal word (true, false or null) at the current position.
func (d *Decoder) literal(word string) error {
	end, err := jsonscan.Literal(d.buf, d.pos, word)
	if err != nil {
		return d.lexError(err)
	}
	d.pos = end
	return nil
}

// skip reads and checks any one value without keeping it.
func (d *Decoder) skip() error {
	switch c := d.peek(); {
	case c == '{':
		_, more, err := d.OpenObject()
		for more {
			if err = d.skip(); err != nil {
				return err
			}
			_, more, err = d.NextMember()
		}
		return err
	case c == '[':
		more, err := d.openArray()
		for more {
			if err = d.skip(); err != nil {
				return err
			}
			more, err = d.nextElement()
		}
		return err
	case c == '"':
		// A string is checked, not unescaped.
		end, err := jsonscan.String(d.buf, d.pos+1)
		if err != nil {
			return d.lexError(err)
		}
		d.pos = end
		return nil
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, err := d.number()
		return err
	default:
		return d.unexpected("looking for beginning of value")
	}
}

// raw reads any one value and returns a copy of its text.
func (d *Decoder) raw() (json.RawMessage, error) {
	d.ws()
	start := d.pos
	if err := d.skip(); err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), d.buf[start:d.pos]...), nil
}

// kind names the JSON type of the next value for error messages.
func (d *Decoder) kind() string {
	if d.ws(); d.pos >= len(d.buf) {
		return "end of input"
	}
	switch c := d.buf[d.pos]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || '0' <= c && c <= '9':
		return "number"
	default:
		return "invalid character " + jsonscan.QuoteChar(c)
	}
}

// wrongKind is the error for a value of another JSON type than want. When the
// value is not even valid JSON, the error says so instead.
func (d *Decoder) wrongKind(want string) error {
	got := d.kind()
	switch got {
	case "object", "array", "string", "boolean", "null", "number":
		return d.typef("want %s, got %s", want, got)
	case "end of input":
		return d.syntaxf("unexpected end of JSON input")
	}
	return d.unexpected("looking for beginning of value")
}

func (d *Decoder) unexpected(context string) error {
	if d.pos >= len(d.buf) {
		return d.syntaxf("unexpected end of JSON input")
	}
	return d.syntaxf("invalid character %s %s", jsonscan.QuoteChar(d.buf[d.pos]), context)
}

// Scalar decoders. Every Decoder of the generated code has the shape
// func(*T, *Decoder) error, so that slices, maps and pointers of any type compose.

// DecString reads a JSON string into *p.
func DecString(p *string, d *Decoder) error {
	// The common case, compact JSON and a string of plain ASCII, read here
	// eight bytes per step; anything else takes the general path from the
	// same position.
	if buf, i := d.buf, d.pos; i < len(buf) && buf[i] == '"' && d.shared() {
		if j := stopAt(buf, i+1); j >= 0 && buf[j] == '"' {
			d.pos = j + 1
			*p = d.src[i+1 : j]
			return nil
		}
	}
	b, plain, err := d.strBytes()
	if err != nil {
		return err
	}
	if plain && d.shared() {
		end := d.pos - 1 // the closing quote
		*p = d.src[end-len(b) : end]
		return nil
	}
	*p = string(b)
	return nil
}

// shared reports whether string values are substrings of d.src, making it on
// first use.
func (d *Decoder) shared() bool {
	if d.src == "" && len(d.buf) <= maxShared {
		d.src = string(d.buf)
	}
	return d.src != ""
}

// newOf returns a pointer to a fresh zero T taken from *slab, which it refills
// with a new array when full. Optional scalars (*string, *int64, *bool,
// *float64, enums, *Timestamp) are the most common pointers of a payload;
// taking them from arrays makes one allocation serve many. The arrays grow
// with use, from first (at least 8), so that a small payload does not pay for
// a large one.
func newOf[T any](slab *[]T, first int) *T {
	s := *slab
	if len(s) == cap(s) {
		s = make([]T, 0, min(max(2*cap(s), first, 8), 256))
	}
	s = s[:len(s)+1]
	*slab = s
	return &s[len(s)-1]
}

// firstStrings is the size of the first slab of optional strings: one per
// 160 bytes of the document. The corpus has one per 174 bytes (median; 92 at
// the tenth percentile), so that most payloads need one slab, not the three
// or four that doubling from 8 took.
func (d *Decoder) firstStrings() int { return len(d.buf) / 160 }

// DecStringPtr, DecInt64Ptr, DecBoolPtr, DecFloat64Ptr and DecTimestampPtr are
// DecPtr for the scalars, with the value taken from the Decoder's slabs.
func DecStringPtr(p **string, d *Decoder) error {
	// A string first: most optional strings have one, and DecString reads it
	// without looking for white space or null again.
	if d.pos < len(d.buf) && d.buf[d.pos] == '"' {
		v := newOf(&d.strs, d.firstStrings())
		*p = v
		return DecString(v, d)
	}
	if d.null() {
		*p = nil
		return nil
	}
	v := newOf(&d.strs, d.firstStrings())
	*p = v
	return DecString(v, d)
}

// DecTimestampPtr reads a timestamp or null into *p.
func DecTimestampPtr(p **Timestamp, d *Decoder) error {
	if d.null() {
		*p = nil
		return nil
	}
	v := newOf(&d.times, 8)
	*p = v
	return DecTimestamp(v, d)
}

// DecInt64Ptr reads an integer or null into *p.
func DecInt64Ptr(p **int64, d *Decoder) error {
	if d.null() {
		*p = nil
		return nil
	}
	v := newOf(&d.ints, 8)
	*p = v
	return DecInt64(v, d)
}

// DecBoolPtr reads a boolean or null into *p.
func DecBoolPtr(p **bool, d *Decoder) error {
	if d.null() {
		*p = nil
		return nil
	}
	v := newOf(&d.bools, 8)
	*p = v
	return DecBool(v, d)
}

// DecFloat64Ptr reads a number or null into *p.
func DecFloat64Ptr(p **float64, d *Decoder) error {
	if d.null() {
		*p = nil
		return nil
	}
	v := newOf(&d.floats, 8)
	*p = v
	return DecFloat64(v, d)
}

// DecBool reads a JSON boolean into *p.
func DecBool(p *bool, d *Decoder) error {
	// The literal right here, compared whole; anything else takes the general
	// path, which also gives the errors.
	if buf, i := d.buf, d.pos; i+5 <= len(buf) {
		if string(buf[i:i+4]) == "true" {
			*p, d.pos = true, i+4
			return nil
		}
		if string(buf[i:i+5]) == "false" {
			*p, d.pos = false, i+5
			return nil
		}
	}
	switch d.peek() {
	case 't':
		*p = true
		return d.literal("true")
	case 'f':
		*p = false
		return d.literal("false")
	}
	return d.wrongKind("boolean")
}

// DecInt64 reads a JSON integer that fits an int64 into *p.
func DecInt64(p *int64, d *Decoder) error {
	// The common case, a positive integer of up to 18 digits (always in
	// range) right here, parsed as it is scanned; anything else (a sign, a
	// leading zero, a fraction or exponent, more digits, white space) takes
	// the general path from the same position.
	if buf, i := d.buf, d.pos; i < len(buf) && buf[i]-'1' < 9 {
		u, j := uint64(0), i
		for j < len(buf) && buf[j]-'0' < 10 && j-i < 18 {
			u = u*10 + uint64(buf[j]-'0')
			j++
		}
		if j < len(buf) && j-i < 18 {
			if c := buf[j]; c != '.' && c != 'e' && c != 'E' && c-'0' >= 10 {
				*p, d.pos = int64(u), j
				return nil
			}
		}
	}
	start := d.pos
	b, err := d.number()
	if err != nil {
		return err
	}
	v, ok := jsonscan.ParseInt64(b)
	if !ok {
		d.pos = start
		return d.typef("want integer (int64), got number %s", b)
	}
	*p = v
	return nil
}

// DecFloat64 reads a JSON number into *p.
func DecFloat64(p *float64, d *Decoder) error {
	start := d.pos
	b, err := d.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		d.pos = start
		return d.typef("number %s out of range of float64", b)
	}
	*p = v
	return nil
}

// DecRaw reads any JSON value into *p, a copy of its text.
func DecRaw(p *json.RawMessage, d *Decoder) error {
	v, err := d.raw()
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// DecPtr decodes a value that may be null: null leaves *p nil.
func DecPtr[T any](p **T, d *Decoder, dec func(*T, *Decoder) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	v := new(T)
	*p = v
	return dec(v, d)
}

// PtrOf makes a Decoder of *T from one of T, for elements that may be null.
func PtrOf[T any](dec func(*T, *Decoder) error) func(**T, *Decoder) error {
	return func(p **T, d *Decoder) error { return DecPtr(p, d, dec) }
}

// DecSlice decodes an array. null gives a nil slice, [] a non-nil empty one, so
// that both encode back as they came.
func DecSlice[T any](p *[]T, d *Decoder, dec func(*T, *Decoder) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	// An empty array costs no allocation: make with capacity 0 gives a non-nil
	// slice without one. The first element allocates room for four.
	s := make([]T, 0)
	more, err := d.openArray()
	for i := 0; more; i++ {
		if i == 0 {
			s = make([]T, 0, 4)
		} else if i == cap(s) && i >= 16 {
			// A long array: count what is left once, so that the slice is
			// allocated at its size instead of doubling (a 25 MiB push holds
			// tens of thousands of commits).
			s = slices.Grow(s, d.countRest())
		}
		var zero T
		s = append(s, zero)
		if err = dec(&s[i], d); err != nil {
			err = atIndex(err, i)
			break
		}
		more, err = d.nextElement()
	}
	*p = s
	return err
}

// countRest returns how many elements an array has from the one at d.pos on,
// reading a copy of the Decoder; a malformed rest counts what it can, and
// decoding then reports the error.
func (d *Decoder) countRest() int {
	probe := Decoder{buf: d.buf, pos: d.pos, depth: d.depth}
	n := 0
	for probe.skip() == nil {
		n++
		if probe.peek() != ',' {
			break
		}
		probe.pos++
	}
	return n
}

// SliceOf makes a Decoder of []T from one of T, for arrays nested in arrays or maps.
func SliceOf[T any](dec func(*T, *Decoder) error) func(*[]T, *Decoder) error {
	return func(p *[]T, d *Decoder) error { return DecSlice(p, d, dec) }
}

// DecMap decodes an object with arbitrary keys. null gives a nil map.
func DecMap[T any](p *map[string]T, d *Decoder, dec func(*T, *Decoder) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	m := make(map[string]T)
	key, more, err := d.OpenObject()
	for more {
		var v T
		if err = dec(&v, d); err != nil {
			err = AtKey(err, key)
			break
		}
		m[string(key)] = v
		key, more, err = d.NextMember()
	}
	*p = m
	return err
}

// MapOf makes a Decoder of map[string]T from one of T.
func MapOf[T any](dec func(*T, *Decoder) error) func(*map[string]T, *Decoder) error {
	return func(p *map[string]T, d *Decoder) error { return DecMap(p, d, dec) }
}

// Start skips white space and returns the offset of the next value, for Since.
func (d *Decoder) Start() int {
	d.ws()
	return d.pos
}

// Since returns a copy of the input from start (an offset Start returned) to
// the current position: the text of the values read since.
func (d *Decoder) Since(start int) json.RawMessage {
	return append(json.RawMessage(nil), d.buf[start:d.pos]...)
}

// NewDecoder returns a Decoder of the JSON document b, for a generated
// UnmarshalJSON or parser.
func NewDecoder(b []byte) Decoder { return Decoder{buf: b} }

// Input is the payload a generated parser decodes: its bytes, and whether the
// decoded string values may share them. Bytes makes the usual one, Owned the
// one whose bytes nothing will ever modify.
type Input struct {
	buf []byte
	src string // buf itself, for Owned
}

// Bytes is the Input of b as any caller has it: the decoded values share
// nothing with b (their strings share one copy of it), so that b may be
// reused or modified once the parser returns.
func Bytes(b []byte) Input { return Input{buf: b} }

// Owned is the Input of b for a caller that hands b over for good: nothing
// modifies b, during the parse or after it, for as long as any value decoded
// from it lives (a body read for one delivery alone, and handed to handlers
// that must not modify it, as emitter.Event.Payload says). The decoded string
// values are then substrings of b itself, not of a copy: a payload costs no
// allocation for its strings at all. A b over maxShared bytes is read as Bytes
// reads it, so that a string kept from a huge payload does not keep all of
// it.
func Owned(b []byte) Input {
	if len(b) == 0 || len(b) > maxShared {
		return Input{buf: b}
	}
	return Input{buf: b, src: unsafe.String(unsafe.SliceData(b), len(b))}
}

// Decoder returns a Decoder of the document in.
func (in Input) Decoder() Decoder { return Decoder{buf: in.buf, src: in.src} }

// Finish completes the decode of the whole document into a value of the type
// typ names: err is what its decoder returned. Only white space may follow the
// value; an error gets typ and its JSON path.
func (d *Decoder) Finish(err error, typ string) error {
	if err == nil {
		err = d.end()
	}
	return finish(err, typ)
}
