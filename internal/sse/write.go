package sse

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidField is matched (with errors.Is) by the error AppendFrame returns for
// a frame the format cannot carry exactly.
var ErrInvalidField = errors.New("sse: invalid field")

// Frame is an event to write.
type Frame struct {
	// Type is the event type; empty writes no "event" field, which a reader
	// takes as "message".
	Type string
	// ID, when not empty, is written as the "id" field.
	ID string
	// Data is written as one "data" line per LF-separated line, so that a
	// reader gets it back exactly. It must not hold CR.
	Data []byte
	// Retry, when positive, is written as the "retry" field (milliseconds).
	Retry time.Duration
}

// AppendFrame appends f in wire format, ending with the blank line that dispatches
// it. It fails, appending nothing, when a field would not read back as written: a
// CR or LF in Type or ID, a NUL in ID, or a CR in Data.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if strings.ContainsAny(f.Type, "\r\n") {
		return dst, fmt.Errorf("%w: event type %q holds a line end", ErrInvalidField, f.Type)
	}
	if strings.ContainsAny(f.ID, "\r\n\x00") {
		return dst, fmt.Errorf("%w: id %q holds a line end or NUL", ErrInvalidField, f.ID)
	}
	if bytes.IndexByte(f.Data, '\r') >= 0 {
		return dst, fmt.Errorf("%w: data holds CR, which a reader would take as a line end", ErrInvalidField)
	}
	if f.Retry > 0 {
		dst = AppendRetry(dst, f.Retry)
	}
	if f.ID != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, f.ID...)
		dst = append(dst, '\n')
	}
	if f.Type != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, f.Type...)
		dst = append(dst, '\n')
	}
	data := f.Data
	for {
		// "data: " with its space, so that a value starting with a space keeps it.
		dst = append(dst, "data: "...)
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			dst = append(dst, data...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, '\n'), nil
}

// AppendRetry appends a "retry" field (d in milliseconds), which sets the
// reader's reconnection delay: alone, without a data line, it makes no event,
// for a stream's opening lines. It does not end an event.
func AppendRetry(dst []byte, d time.Duration) []byte {
	dst = append(dst, "retry: "...)
	dst = strconv.AppendInt(dst, d.Milliseconds(), 10)
	return append(dst, '\n')
}

// AppendComment appends text as comment lines, which readers skip: servers send
// them as keep-alives. It does not end an event.
func AppendComment(dst []byte, text string) []byte {
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\r' || r == '\n' })
	if len(lines) == 0 {
		return append(dst, ":\n"...)
	}
	for _, line := range lines {
		dst = append(dst, ": "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return dst
}
