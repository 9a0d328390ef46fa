package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// hopByHop are the headers that describe one connection, not the delivery: they
// are not put in a channel message (a relay would have to drop them again, and
// smee-client's HTTP stack refuses some of them).
var hopByHop = map[string]bool{
	"connection":          true,
	"keep-alive":          true,
	"proxy-authenticate":  true,
	"proxy-authorization": true,
	"proxy-connection":    true,
	"te":                  true,
	"trailer":             true,
	"transfer-encoding":   true,
	"upgrade":             true,
}

// reserved are the message's own members; a request header of the same name is
// left out rather than written twice.
var reserved = map[string]bool{
	"body":      true,
	"bodyb":     true,
	"rawbody":   true,
	"query":     true,
	"timestamp": true,
}

// encodeMessage returns the data of the "message" event for one delivery: a JSON
// object on one line holding the request's headers (lowercased names, several
// values joined with ", ", as Node.js presents them), "body" (the payload as JSON),
// "bodyB" (the exact body in standard padded base64), "query" and "timestamp"
// (Unix milliseconds).
//
// "body" is the request body itself when it is JSON without line ends; JSON with
// line ends (pretty-printed) is compacted, which drops only white space between
// tokens, because an event's data must be one line; a body that is not JSON is
// given as a JSON string when it is text (UTF-8 without control characters
// but tab and line ends), and as {} otherwise, so that "body" is never more
// than twice the body's size. In every case "bodyB" has the bytes as received.
func encodeMessage(r *http.Request, body []byte, now time.Time) []byte {
	skip := map[string]bool{}
	for _, v := range r.Header.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			skip[strings.ToLower(strings.TrimSpace(name))] = true
		}
	}
	headers := map[string]string{}
	for name, values := range r.Header {
		lower := strings.ToLower(name)
		if hopByHop[lower] || reserved[lower] || skip[lower] {
			continue
		}
		headers[lower] = strings.Join(values, ", ")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	// The length as received, so that a relay that only has "body" can tell a
	// re-serialised body from the original.
	headers["content-length"] = strconv.Itoa(len(body))

	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)

	var head []byte
	head = append(head, '{')
	for _, name := range names {
		head = appendString(head, name)
		head = append(head, ':')
		head = appendString(head, headers[name])
		head = append(head, ',')
	}
	bodyJSON := bodyValue(body)
	query := appendQuery(nil, r.URL.Query())

	// One allocation of the exact size: the message stays in the replay
	// buffer, which counts its length, so its capacity must be no larger.
	b64 := base64.StdEncoding
	const fixed = len(`"body":,"bodyB":"","query":,"timestamp":}`) + 20
	out := make([]byte, 0, len(head)+len(bodyJSON)+b64.EncodedLen(len(body))+len(query)+fixed)
	out = append(out, head...)
	out = append(out, `"body":`...)
	out = append(out, bodyJSON...)
	out = append(out, `,"bodyB":"`...)
	out = b64.AppendEncode(out, body)
	out = append(out, `","query":`...)
	out = append(out, query...)
	out = append(out, `,"timestamp":`...)
	out = strconv.AppendInt(out, now.UnixMilli(), 10)
	return append(out, '}')
}

// bodyValue returns the "body" member's value: body itself when it can stand
// as it is, or a new compacted or quoted form.
func bodyValue(body []byte) []byte {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}") // an empty body, as body parsers present it
	}
	if !json.Valid(body) {
		if !isText(body) {
			return []byte("{}")
		}
		return appendString(nil, string(body))
	}
	if bytes.IndexByte(body, '\n') < 0 && bytes.IndexByte(body, '\r') < 0 {
		return body // as received, byte for byte
	}
	var buf bytes.Buffer
	buf.Grow(len(body))
	if err := json.Compact(&buf, body); err != nil {
		return appendString(nil, string(body)) // cannot happen: body is valid
	}
	return buf.Bytes()
}

// appendQuery appends the query as a JSON object: a name given once maps to its
// string, a name given several times to an array of them.
func appendQuery(out []byte, q url.Values) []byte {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	out = append(out, '{')
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, name)
		out = append(out, ':')
		vs := q[name]
		if len(vs) == 1 {
			out = appendString(out, vs[0])
			continue
		}
		out = append(out, '[')
		for j, v := range vs {
			if j > 0 {
				out = append(out, ',')
			}
			out = appendString(out, v)
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

// appendString appends s as a JSON string, without the HTML escaping that
// json.Marshal applies, so that values read back as they were.
func appendString(out []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// isText reports whether b is UTF-8 without control characters other than tab,
// CR and LF: as a JSON string it then takes at most twice its size.
func isText(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return utf8.Valid(b)
}
