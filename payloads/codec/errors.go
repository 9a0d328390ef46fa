package payloads

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every decoding error about input that is not valid
// JSON. Test for it with errors.Is.
var ErrSyntax = errors.New("malformed JSON")

// ErrType is wrapped by every decoding error about valid JSON whose value does
// not have the type the schema gives it, such as a string where an integer id
// belongs or a top-level value that is not an object. Test for it with errors.Is.
var ErrType = errors.New("JSON value does not fit the schema")

// ErrEncode is wrapped by every error of MarshalJSON: a value built in Go that
// cannot be written as JSON (a union with no variant set or several, a NaN, a
// json.RawMessage that is not valid JSON).
var ErrEncode = errors.New("cannot encode")

// DecodeError is the error of decoding a payload: which type was decoded, where
// in the document the problem is, and why. It unwraps to ErrSyntax or ErrType.
type DecodeError struct {
	// Type is the Go type that was being decoded, such as "IssuesOpenedEvent".
	Type string
	// Path is the JSON path of the offending value, such as ".issue.labels[2].id";
	// empty for the document itself.
	Path string
	// Offset is the byte offset in the input at which the problem was found.
	Offset int
	// Err says what was wrong; it wraps ErrSyntax or ErrType.
	Err error

	// segs holds the path while the error travels up the decoders, innermost
	// first; finish turns it into Path.
	segs []string
}

// Error describes the problem, its place and the type being decoded.
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("payloads: decoding ")
	if e.Type != "" {
		b.WriteString(e.Type)
	} else {
		b.WriteString("payload")
	}
	if e.Path != "" {
		b.WriteString(" at ")
		b.WriteString(e.Path)
	}
	fmt.Fprintf(&b, " (byte %d): %v", e.Offset, e.Err)
	return b.String()
}

// Unwrap returns the cause, which wraps ErrSyntax or ErrType.
func (e *DecodeError) Unwrap() error { return e.Err }

// kindError is the cause inside a DecodeError: a message and its sentinel.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func (d *Decoder) syntaxf(format string, args ...any) error {
	return &DecodeError{Offset: d.pos, Err: &kindError{ErrSyntax, fmt.Sprintf(format, args...)}}
}

func (d *Decoder) typef(format string, args ...any) error {
	return &DecodeError{Offset: d.pos, Err: &kindError{ErrType, fmt.Sprintf(format, args...)}}
}

// AtKey and atIndex add one step to the path of an error on its way up. AtKey
// stays a call: it runs only on errors, and inlined at each generated decode
// function it would only add to what compiling them costs.
//
//go:noinline
func AtKey(err error, key []byte) error {
	if e, ok := err.(*DecodeError); ok {
		e.segs = append(e.segs, "."+string(key))
	}
	return err
}

func atIndex(err error, i int) error {
	if e, ok := err.(*DecodeError); ok {
		e.segs = append(e.segs, "["+strconv.Itoa(i)+"]")
	}
	return err
}

// finish completes an error at the top of a decode: the type and the path.
func finish(err error, typ string) error {
	e, ok := err.(*DecodeError)
	if !ok {
		return err
	}
	if e.Type == "" {
		e.Type = typ
	}
	if len(e.segs) > 0 {
		var b strings.Builder
		for i := len(e.segs) - 1; i >= 0; i-- {
			b.WriteString(e.segs[i])
		}
		e.Path = b.String() + e.Path
		e.segs = nil
	}
	return e
}

func encodeErrorf(format string, args ...any) error {
	return fmt.Errorf("payloads: %w: "+format, append([]any{ErrEncode}, args...)...)
}
