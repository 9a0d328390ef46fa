package relay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ErrBadMessage is matched (with errors.Is) by the error ParseMessage returns for
// a message it cannot read a delivery from.
var ErrBadMessage = errors.New("relay: bad channel message")

// Message is one delivery read from a channel.
type Message struct {
	// EventID is the event stream's last event id after this message.
	EventID string
	// Header holds the delivery's headers, canonical names.
	Header http.Header
	// Body is the delivery body. See BodySource for how exact it is.
	Body []byte
	// BodySource names the member Body came from: "bodyB" (base64 of the exact
	// bytes), "rawBody" (the exact text), or "body" (the payload as the proxy
	// wrote it in its JSON: exact when the proxy copied the bytes in, a
	// re-serialisation when it did not).
	BodySource string
	// OriginalLength is the body's length as the forge sent it, from the
	// content-length header the proxy recorded, or -1 when unknown.
	OriginalLength int64
	// Query is the query string the delivery was posted with.
	Query url.Values
	// Timestamp is when the proxy received the delivery, zero when not given.
	Timestamp time.Time
}

// members of a message that are not headers.
var members = map[string]bool{"body": true, "bodyB": true, "rawBody": true, "query": true, "timestamp": true}

// ParseMessage reads a delivery from the data of a channel's "message" event: a
// JSON object of lowercased header names, "body", and optionally "bodyB",
// "rawBody", "query" and "timestamp". The body is taken from "bodyB" when
// present, then "rawBody", then "body", whose bytes are taken as they stand in the
// data: decoding and re-encoding them would change them (Go's encoder escapes <,
// > and &, for one), and the signature with them.
func ParseMessage(data []byte) (*Message, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("%w: data is not a JSON object: %v", ErrBadMessage, err)
	}
	m := &Message{Header: http.Header{}, OriginalLength: -1}
	for name, raw := range obj {
		if members[name] || !validHeaderName(name) {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil || !validHeaderValue(v) {
			continue // not a header a request could carry
		}
		m.Header.Set(name, v)
	}
	switch {
	case present(obj["bodyB"]):
		var s string
		if err := json.Unmarshal(obj["bodyB"], &s); err != nil {
			return nil, fmt.Errorf("%w: bodyB is not a string", ErrBadMessage)
		}
		b, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: bodyB is not standard padded base64: %v", ErrBadMessage, err)
		}
		m.Body, m.BodySource = b, "bodyB"
	case present(obj["rawBody"]):
		var s string
		if err := json.Unmarshal(obj["rawBody"], &s); err != nil {
			return nil, fmt.Errorf("%w: rawBody is not a string", ErrBadMessage)
		}
		m.Body, m.BodySource = []byte(s), "rawBody"
	case present(obj["body"]):
		m.Body, m.BodySource = bytes.Clone(obj["body"]), "body"
	default:
		return nil, fmt.Errorf("%w: no body, bodyB or rawBody member", ErrBadMessage)
	}
	if n, err := strconv.ParseInt(m.Header.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		m.OriginalLength = n
	}
	if raw := obj["query"]; present(raw) {
		m.Query = parseQuery(raw)
	}
	var ms int64
	if raw := obj["timestamp"]; present(raw) && json.Unmarshal(raw, &ms) == nil {
		m.Timestamp = time.UnixMilli(ms)
	}
	return m, nil
}

func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// parseQuery reads {"name":"value"} or {"name":["v1","v2"]}; other values are
// left out.
func parseQuery(raw json.RawMessage) url.Values {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || len(obj) == 0 {
		return nil
	}
	q := url.Values{}
	for name, v := range obj {
		var s string
		var list []string
		switch {
		case json.Unmarshal(v, &s) == nil:
			q.Add(name, s)
		case json.Unmarshal(v, &list) == nil:
			q[name] = append(q[name], list...)
		}
	}
	return q
}

// DeliveryID returns the delivery id: the forge's delivery header, or, as the
// original library's relay table has it, x-request-id.
func (m *Message) DeliveryID() string {
	if id := m.Header.Get("X-Forge-Delivery"); id != "" {
		return id
	}
	return m.Header.Get("X-Request-Id")
}

// Event returns the event name, from the forge's event header.
func (m *Message) Event() string { return m.Header.Get("X-Forge-Event") }

// Signature returns the signature to verify: X-Hub-Signature-256; or, only when
// allowSHA1 is set and that header is absent, the old X-Hub-Signature (sha1 is
// then true).
func (m *Message) Signature(allowSHA1 bool) (sig string, sha1 bool) {
	if s := m.Header.Get("X-Hub-Signature-256"); s != "" {
		return s, false
	}
	if allowSHA1 {
		if s := m.Header.Get("X-Hub-Signature"); s != "" {
			return s, true
		}
	}
	return "", false
}

// Reserialized reports whether the body is known to differ from what the forge
// sent: it came from "body" (bodyB and rawBody are exact) and its length is not
// the original's. A signature that fails on such a body says nothing about the
// secret.
func (m *Message) Reserialized() bool {
	return m.BodySource == "body" && m.OriginalLength >= 0 && m.OriginalLength != int64(len(m.Body))
}

// ReserializedError explains a signature failure on a re-serialised body.
func (m *Message) ReserializedError() error {
	return fmt.Errorf("%w: the proxy re-serialised the body (the forge sent %d bytes, the channel carried %d), so the signature cannot match; use a proxy that sends the exact bytes in bodyB, such as forgehooks proxy",
		ErrReserialized, m.OriginalLength, len(m.Body))
}

// ErrReserialized is matched (with errors.Is) by ReserializedError's error.
var ErrReserialized = errors.New("relay: body changed in transit")

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for _, c := range []byte(s) {
		if c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}
