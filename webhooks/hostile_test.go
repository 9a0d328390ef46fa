package webhooks

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
)

// generous bounds a wait that only a bug makes long. It times nothing: on a
// loaded machine a correct run is far inside it.
const generous = 60 * time.Second

// hostile is a Webhooks with counting handlers behind a real server on
// 127.0.0.1, for requests that no well-behaved forge sends.
type hostile struct {
	wh      *Webhooks
	mw      *Middleware
	srv     *http.Server
	addr    string
	logs    *logRecords
	runs    atomic.Int32 // OnAny handler runs
	ids     sync.Map     // delivery ids the OnAny handler saw
	told    atomic.Int32 // error handler calls
	release chan struct{}
}

// newHostile starts a server whose OnAny handler behaves by event name:
// "panic" panics, "never" blocks until the test ends, "status" fails with an
// error wrapping WithStatus(422), anything else succeeds.
func newHostile(t *testing.T, opts MiddlewareOptions) *hostile {
	t.Helper()
	h := &hostile{logs: &logRecords{}, release: make(chan struct{})}
	h.wh = mustNew(t, Options{Secret: secret, Logger: slog.New(h.logs)})
	h.wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		h.runs.Add(1)
		h.ids.Store(e.ID, true)
		switch e.Name {
		case "panic":
			panic("handler exploded")
		case "never":
			<-h.release
		case "status":
			return fmt.Errorf("cannot handle it: %w", WithStatus(http.StatusUnprocessableEntity, errors.New("no such repository")))
		}
		return nil
	})
	h.wh.OnError(func(context.Context, *emitter.Error) { h.told.Add(1) })
	h.mw = NewMiddleware(h.wh, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.srv = &http.Server{Handler: h.mw, ErrorLog: nil}
	go h.srv.Serve(ln)
	t.Cleanup(func() {
		h.finish(t)
		h.srv.Close()
	})
	return h
}

// finish lets blocked handlers return and waits for every delivery and error
// handler, so that the counters are final.
func (h *hostile) finish(t *testing.T) {
	t.Helper()
	h.releaseHandlers()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	if err := h.wh.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// releaseHandlers lets the handlers blocked on "never" return. Called from the
// test's goroutine only (roundTrip's afterFirst, finish, cleanup).
func (h *hostile) releaseHandlers() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// hmacHex is the hex HMAC of body under secret with hash h, computed here
// rather than with package signing, which refuses an empty payload.
func hmacHex(newHash func() hash.Hash, key string, body []byte) string {
	m := hmac.New(newHash, []byte(key))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

var (
	sha256Hash = sha256.New
	sha1Hash   = sha1.New
)

// hreq is a request of the matrix. Zero fields give a valid delivery of
// defaultBody: POST to DefaultPath, application/json, event "issues",
// delivery "d-1", and the body's signature under the primary secret.
type hreq struct {
	method  string
	target  string
	body    []byte
	chunked bool     // no Content-Length: sent chunked
	event   string   // X-Forge-Event; default "issues"
	sig     string   // the signature header; "" signs the body, "<valid>+x" appends x
	headers []string // name, value pairs applied last; value "<del>" deletes, "<add>:v" adds v
	raw     string   // when set, written as is over TCP; everything else is ignored
}

var defaultBody = []byte(`{"action":"opened","issue":{"number":1}}`)

func validSig(body []byte) string { return "sha256=" + hmacHex(sha256Hash, secret, body) }

// build turns the fields of an hreq into the bytes of an HTTP/1.1 request.
func (q hreq) build() []byte {
	if q.raw != "" {
		return []byte(q.raw)
	}
	method, target, body, event := q.method, q.target, q.body, q.event
	if method == "" {
		method = http.MethodPost
	}
	if target == "" {
		target = DefaultPath
	}
	if body == nil {
		body = defaultBody
	}
	if event == "" {
		event = "issues"
	}
	sig := validSig(body)
	switch {
	case strings.HasPrefix(q.sig, "<valid>"):
		sig += strings.TrimPrefix(q.sig, "<valid>")
	case q.sig != "":
		sig = q.sig
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, event)
	h.Set(HeaderDelivery, "d-1")
	h.Set(HeaderSignature, sig)
	for i := 0; i < len(q.headers); i += 2 {
		k, v := q.headers[i], q.headers[i+1]
		switch {
		case v == "<del>":
			h.Del(k)
		case strings.HasPrefix(v, "<add>:"):
			h.Add(k, strings.TrimPrefix(v, "<add>:"))
		default:
			h.Set(k, v)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, target)
	if q.chunked {
		b.WriteString("Transfer-Encoding: chunked\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	// Written by hand: Header.Write would trim and clean the values.
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if q.chunked {
		// Two chunks, so that the body really arrives in pieces.
		half := len(body) / 2
		for _, c := range [][]byte{body[:half], body[half:]} {
			if len(c) > 0 {
				fmt.Fprintf(&b, "%x\r\n%s\r\n", len(c), c)
			}
		}
		b.WriteString("0\r\n\r\n")
	} else {
		b.Write(body)
	}
	return b.Bytes()
}

// roundTrip writes raw bytes to the server over one TCP connection, half-closes
// it, and reads every response the server sends before it closes. afterFirst,
// when not nil, runs once the first response is read: a handler that holds the
// connection open is released there, so that the rest is read without waiting
// out the connection's deadline.
func (h *hostile) roundTrip(t *testing.T, raw []byte, method string, afterFirst func()) []*http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", h.addr, generous)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(generous))
	// Written while the answers are read: a server may answer (and close)
	// before it has read everything, and a write error then is expected.
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write(raw)
		conn.(*net.TCPConn).CloseWrite()
		wrote <- err
	}()
	br := bufio.NewReader(conn)
	var out []*http.Response
	for {
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			if len(out) == 0 {
				t.Fatalf("no response: %v (write: %v)", err, <-wrote)
			}
			return out
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("reading a response body: %v", err)
		}
		res.Body = io.NopCloser(bytes.NewReader(b))
		out = append(out, res)
		if len(out) == 1 && afterFirst != nil {
			afterFirst()
		}
	}
}

func bodyOf(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

// nest returns a JSON object holding depth-1 nested arrays.
func nest(depth int) []byte {
	return []byte(`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
}

const (
	ctJSON = "application/json"
	ctText = "text/plain; charset=utf-8"
)

// TestHostileMatrix sends requests no well-behaved forge sends, each over its
// own TCP connection to a real server, and checks the answer and that no
// handler ran unless the signature was valid (and the rest of the request
// acceptable). Rows with a second response are requests whose bytes net/http
// reads as more than one request.
func TestHostileMatrix(t *testing.T) {
	mismatch := `{"error":"signature does not match event payload and secret"}`
	missing := func(names string) string { return `{"error":"Required headers missing: ` + names + `"}` }
	repeated := func(names string) string { return `{"error":"Headers sent more than once, ambiguous: ` + names + `"}` }
	notObject := func(kind string) string {
		return `{"error":"payload is not a JSON object (event \"issues\", delivery \"d-1\"): it is a JSON ` + kind + `"}`
	}
	unsupported := `{"error":"Unsupported \"Content-Type\" header value. Must be \"application/json\""}`
	netHTTP400 := "400 Bad Request" // net/http's own answer, before any handler

	type row struct {
		name    string
		opts    MiddlewareOptions
		req     hreq
		status  int
		body    string // exact, when set
		has     string // a substring of the body, when set
		ctype   string // Content-Type of the answer, when set
		header  []string
		runs    int32 // handler runs: 1 only with a valid signature
		told    int32 // error handler calls
		second  int   // status of a second response on the connection, when set
		noSecon bool  // the server must send exactly one response
		holds   bool  // the handler holds the connection until released
	}
	rows := []row{
		// Bodies.
		{name: "valid delivery", req: hreq{}, status: 200, body: "ok\n", ctype: ctText, runs: 1},
		{name: "empty body, HMAC of nothing", req: hreq{body: []byte{}}, status: 400, body: `{"error":"event payload is required"}`, ctype: ctJSON},
		{name: "empty body, no signature", req: hreq{body: []byte{}, headers: []string{HeaderSignature, "<del>"}}, status: 400, body: missing("x-hub-signature-256")},
		{name: "null", req: hreq{body: []byte(`null`)}, status: 400, body: notObject("null"), ctype: ctJSON},
		{name: "array", req: hreq{body: []byte(`[{"action":"opened"}]`)}, status: 400, body: notObject("array")},
		{name: "string", req: hreq{body: []byte(`"{\"action\":\"opened\"}"`)}, status: 400, body: notObject("string")},
		{name: "number", req: hreq{body: []byte(`42`)}, status: 400, body: notObject("number")},
		{name: "boolean", req: hreq{body: []byte(`true`)}, status: 400, body: notObject("boolean")},
		{name: "whitespace only", req: hreq{body: []byte(" \n\t ")}, status: 400, has: "payload is not a JSON object"},
		{name: "invalid JSON", req: hreq{body: []byte(`{"action":`)}, status: 400, has: "payload is not a JSON object"},
		{name: "invalid JSON, unsigned", req: hreq{body: []byte(`{"action":`), sig: "sha256=" + strings.Repeat("0", 64)}, status: 400, body: mismatch, told: 1},
		{name: "two objects", req: hreq{body: []byte(`{}{}`)}, status: 400, has: "payload is not a JSON object"},
		{name: "invalid UTF-8 inside a string", req: hreq{body: []byte("{\"action\":\"opened\",\"title\":\"\xff\xfe\xc0\"}")}, status: 200, body: "ok\n", runs: 1},
		{name: "invalid UTF-8 outside strings", req: hreq{body: []byte("{\"action\":\"opened\"}\xff")}, status: 400, has: "invalid JSON"},
		{name: "UTF-8 BOM", req: hreq{body: append([]byte("\xef\xbb\xbf"), defaultBody...)}, status: 400, has: "payload is not a JSON object"},
		{name: "NUL byte", req: hreq{body: []byte("{\"a\":1}\x00")}, status: 400, has: "invalid JSON"},
		{name: "1000-deep nesting", req: hreq{body: nest(1000)}, status: 200, body: "ok\n", runs: 1},
		{name: "10000-deep nesting (encoding/json's limit)", req: hreq{body: nest(10000)}, status: 200, body: "ok\n", runs: 1},
		{name: "10001-deep nesting", req: hreq{body: nest(10001)}, status: 400, has: "payload is not a JSON object"},
		{name: "a million deep, unclosed", req: hreq{body: []byte(`{"a":` + strings.Repeat("[", 1_000_000))}, status: 400, has: "payload is not a JSON object"},
		{name: "chunked, no Content-Length", req: hreq{chunked: true}, status: 200, body: "ok\n", runs: 1},
		{name: "chunked, empty", req: hreq{chunked: true, body: []byte{}}, status: 400, body: `{"error":"event payload is required"}`},
		{name: "over the limit by Content-Length", opts: MiddlewareOptions{MaxBodyBytes: 10}, req: hreq{}, status: 413, body: `{"error":"Payload too large: the limit is 10 bytes"}`, ctype: ctJSON},
		{name: "over the limit, chunked", opts: MiddlewareOptions{MaxBodyBytes: 10}, req: hreq{chunked: true}, status: 413, body: `{"error":"Payload too large: the limit is 10 bytes"}`},
		// Content-Length shorter than the body: the body is cut there, so the
		// signature (over all of it) fails; net/http reads the rest as a
		// request line, answers 400 and closes.
		{name: "Content-Length too short", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d-1\r\n" + HeaderSignature + ": " + validSig(defaultBody) + "\r\n" +
			"Content-Length: 10\r\n\r\n" + string(defaultBody)}, status: 400, body: mismatch, told: 1, second: 400},
		// Content-Length longer than the body, then the client stops sending:
		// the body read fails at the end of the stream.
		{name: "Content-Length too long", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d-1\r\n" + HeaderSignature + ": " + validSig(defaultBody) + "\r\n" +
			"Content-Length: 1000\r\n\r\n" + string(defaultBody)}, status: 400, body: `{"error":"Could not read the request body"}`, noSecon: true},
		{name: "Content-Length over the limit, body short", opts: MiddlewareOptions{MaxBodyBytes: 100}, req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d-1\r\n" + HeaderSignature + ": " + validSig(defaultBody) + "\r\n" +
			"Content-Length: 101\r\n\r\n" + string(defaultBody)}, status: 413, body: `{"error":"Payload too large: the limit is 100 bytes"}`},
		{name: "Content-Length not a number", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n"}, status: 400, has: netHTTP400},
		{name: "Content-Length twice, different", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"}, status: 400, has: netHTTP400},
		// Both: net/http reads it chunked, as RFC 9112 says, and drops the
		// Content-Length; the signature is over the bytes actually read.
		{name: "Content-Length and chunked", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d-1\r\n" + HeaderSignature + ": " + validSig([]byte(`{}`)) + "\r\n" +
			"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"}, status: 200, body: "ok\n", runs: 1},

		// Headers.
		{name: "event missing", req: hreq{headers: []string{HeaderEvent, "<del>"}}, status: 400, body: missing("x-forge-event"), ctype: ctJSON},
		{name: "signature missing", req: hreq{headers: []string{HeaderSignature, "<del>"}}, status: 400, body: missing("x-hub-signature-256")},
		{name: "delivery missing", req: hreq{headers: []string{HeaderDelivery, "<del>"}}, status: 400, body: missing("x-forge-delivery")},
		{name: "all three missing", req: hreq{headers: []string{HeaderDelivery, "<del>", HeaderSignature, "<del>", HeaderEvent, "<del>"}}, status: 400, body: missing("x-forge-event, x-hub-signature-256, x-forge-delivery")},
		{name: "event empty", req: hreq{headers: []string{HeaderEvent, ""}}, status: 400, body: missing("x-forge-event")},
		{name: "signature empty", req: hreq{headers: []string{HeaderSignature, ""}}, status: 400, body: missing("x-hub-signature-256")},
		{name: "delivery blank", req: hreq{headers: []string{HeaderDelivery, " \t "}}, status: 400, body: missing("x-forge-delivery")},
		{name: "event twice", req: hreq{headers: []string{HeaderEvent, "<add>:push"}}, status: 400, body: repeated("x-forge-event")},
		{name: "signature twice", req: hreq{headers: []string{HeaderSignature, "<add>:" + validSig(defaultBody)}}, status: 400, body: repeated("x-hub-signature-256")},
		{name: "delivery twice", req: hreq{headers: []string{HeaderDelivery, "<add>:d-2"}}, status: 400, body: repeated("x-forge-delivery")},
		{name: "one missing, one twice", req: hreq{headers: []string{HeaderEvent, "<del>", HeaderDelivery, "<add>:d-2"}}, status: 400, body: missing("x-forge-event")},
		{name: "signature in upper case", req: hreq{sig: strings.ToUpper(validSig(defaultBody))}, status: 400, body: mismatch, told: 1},
		{name: "signature digits in upper case", req: hreq{sig: "sha256=" + strings.ToUpper(hmacHex(sha256Hash, secret, defaultBody))}, status: 400, body: mismatch, told: 1},
		{name: "signature without prefix", req: hreq{sig: hmacHex(sha256Hash, secret, defaultBody)}, status: 400, body: mismatch, told: 1},
		{name: "valid sha1= signature", req: hreq{sig: "sha1=" + hmacHex(sha1Hash, secret, defaultBody)}, status: 400, body: mismatch, told: 1},
		{name: "sha1= prefix on the sha256 digest", req: hreq{sig: "sha1=" + hmacHex(sha256Hash, secret, defaultBody)}, status: 400, body: mismatch, told: 1},
		{name: "signature with surrounding spaces (trimmed)", req: hreq{sig: "  " + validSig(defaultBody) + "\t"}, status: 200, body: "ok\n", runs: 1},
		{name: "signature with a space inside", req: hreq{sig: "sha256= " + hmacHex(sha256Hash, secret, defaultBody)}, status: 400, body: mismatch, told: 1},
		{name: "signature truncated", req: hreq{sig: validSig(defaultBody)[:len(validSig(defaultBody))-1]}, status: 400, body: mismatch, told: 1},
		{name: "signature with a byte more", req: hreq{sig: "<valid>0"}, status: 400, body: mismatch, told: 1},
		{name: "signature 10 KiB long", req: hreq{sig: "<valid>" + strings.Repeat("a", 10<<10)}, status: 400, body: mismatch, told: 1},
		{name: "signature of another body", req: hreq{sig: validSig([]byte(`{"action":"closed"}`))}, status: 400, body: mismatch, told: 1},
		{name: "headers over net/http's 1 MiB", req: hreq{headers: []string{"X-Padding", strings.Repeat("p", 2<<20)}}, status: 431, has: "431 Request Header Fields Too Large"},
		{name: "content type with parameters", req: hreq{headers: []string{"Content-Type", "application/json; charset=utf-8"}}, status: 200, body: "ok\n", runs: 1},
		{name: "content type in other case", req: hreq{headers: []string{"Content-Type", "APPLICATION/Json"}}, status: 200, body: "ok\n", runs: 1},
		{name: "form content type", req: hreq{headers: []string{"Content-Type", "application/x-www-form-urlencoded"}}, status: 415, body: unsupported, ctype: ctJSON},
		{name: "form content type, form body", req: hreq{body: []byte("payload=%7B%7D"), headers: []string{"Content-Type", "application/x-www-form-urlencoded"}}, status: 415, body: unsupported},
		{name: "content type missing", req: hreq{headers: []string{"Content-Type", "<del>"}}, status: 415, body: unsupported},
		{name: "content type list", req: hreq{headers: []string{"Content-Type", "application/json, text/plain"}}, status: 415, body: unsupported},
		{name: "content type twice", req: hreq{headers: []string{"Content-Type", "<add>:application/json"}}, status: 415, body: unsupported},
		{name: "header name with a space", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nX-Forge Event: issues\r\nContent-Length: 0\r\n\r\n"}, status: 400, has: netHTTP400},

		// Methods and paths.
		{name: "GET", req: hreq{method: "GET"}, status: 404, body: `{"error":"Unknown route: GET /api/forge/webhooks"}`, ctype: ctJSON},
		{name: "PUT", req: hreq{method: "PUT"}, status: 404, body: `{"error":"Unknown route: PUT /api/forge/webhooks"}`},
		{name: "HEAD", req: hreq{method: "HEAD"}, status: 404, body: ""},
		{name: "OPTIONS", req: hreq{method: "OPTIONS"}, status: 404, body: `{"error":"Unknown route: OPTIONS /api/forge/webhooks"}`},
		{name: "lower-case post", req: hreq{method: "post"}, status: 404, body: `{"error":"Unknown route: post /api/forge/webhooks"}`},
		{name: "trailing slashes", req: hreq{target: DefaultPath + "///"}, status: 200, body: "ok\n", runs: 1},
		{name: "query string", req: hreq{target: DefaultPath + "?a=b&c"}, status: 200, body: "ok\n", runs: 1},
		{name: "query that does not decode", req: hreq{target: DefaultPath + "?%zz=%"}, status: 200, body: "ok\n", runs: 1},
		{name: "percent-encoded letter", req: hreq{target: "/api/forge/web%68ooks"}, status: 200, body: "ok\n", runs: 1},
		{name: "percent-encoded slash", req: hreq{target: "/api%2Fforge/webhooks"}, status: 404, body: `{"error":"Unknown route: POST /api%2Fforge/webhooks"}`},
		{name: "percent-encoded trailing slash", req: hreq{target: DefaultPath + "%2F"}, status: 404},
		{name: "percent-encoded NUL", req: hreq{target: DefaultPath + "%00"}, status: 404},
		{name: "dot segment", req: hreq{target: "/api/forge/./webhooks"}, status: 404},
		{name: "upper-case path", req: hreq{target: "/API/forge/webhooks"}, status: 404},
		{name: "absolute-form target", req: hreq{target: "http://127.0.0.1" + DefaultPath}, status: 200, body: "ok\n", runs: 1},
		{name: "asterisk target", req: hreq{target: "*"}, status: 404, body: `{"error":"Unknown route: POST *"}`},
		{name: "URL that does not parse", req: hreq{target: "/api/forge/%zz"}, status: 400, has: netHTTP400},
		{name: "URL with a bare percent", req: hreq{target: DefaultPath + "%"}, status: 400, has: netHTTP400},
		{name: "URL with a control byte", req: hreq{target: DefaultPath + "\x7f"}, status: 400, has: netHTTP400},
		{name: "no request target", req: hreq{raw: "POST  HTTP/1.1\r\nHost: x\r\n\r\n"}, status: 400, has: netHTTP400},
		{name: "HTTP/0.9", req: hreq{raw: "POST " + DefaultPath + "\r\n\r\n"}, status: 400, has: netHTTP400},
		{name: "HTTP/1.0 without Host", req: hreq{raw: "POST " + DefaultPath + " HTTP/1.0\r\nContent-Type: application/json\r\n" +
			HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d-1\r\n" + HeaderSignature + ": " + validSig(defaultBody) + "\r\n" +
			"Content-Length: " + strconv.Itoa(len(defaultBody)) + "\r\n\r\n" + string(defaultBody)}, status: 200, body: "ok\n", runs: 1},

		// Handlers.
		{name: "handler panics", req: hreq{event: "panic"}, status: 500, body: `{"error":"handler failed; the receiver's log has the details"}`, ctype: ctJSON, runs: 1, told: 1},
		// The 202 comes while the handler runs; once it is released, the server
		// closes the connection without a second response.
		{name: "handler never returns", opts: MiddlewareOptions{Timeout: 50 * time.Millisecond}, req: hreq{event: "never"}, status: 202, body: "still processing\n", ctype: ctText, runs: 1, holds: true, noSecon: true},
		{name: "handler error wraps a status", req: hreq{event: "status"}, status: 422, body: `{"error":"cannot handle it: no such repository"}`, runs: 1, told: 1},
		{name: "unknown event name", req: hreq{event: "no_such_event"}, status: 200, body: "ok\n", runs: 1},
		{name: "event name with odd bytes", req: hreq{event: "a.b\x01c"}, status: 400, has: netHTTP400},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHostile(t, tt.opts)
			method := tt.req.method
			if method == "" {
				method = http.MethodPost
			}
			var afterFirst func()
			if tt.holds {
				afterFirst = h.releaseHandlers
			}
			resps := h.roundTrip(t, tt.req.build(), method, afterFirst)
			res := resps[0]
			body := bodyOf(res)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tt.status, body)
			}
			if tt.body != "" || tt.has == "" && method != "HEAD" && tt.status < 400 {
				if body != tt.body {
					t.Errorf("body %q, want %q", body, tt.body)
				}
			}
			if tt.has != "" && !strings.Contains(body, tt.has) {
				t.Errorf("body %q lacks %q", body, tt.has)
			}
			if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tt.ctype)
			}
			switch {
			case tt.second != 0:
				if len(resps) != 2 || resps[1].StatusCode != tt.second {
					t.Errorf("got %d responses, want a second one with status %d", len(resps), tt.second)
				}
			case tt.noSecon && len(resps) != 1:
				t.Errorf("got %d responses, want 1", len(resps))
			}
			h.finish(t)
			if got := h.runs.Load(); got != tt.runs {
				t.Errorf("handler ran %d times, want %d", got, tt.runs)
			}
			if got := h.told.Load(); got != tt.told {
				t.Errorf("error handlers told %d times, want %d", got, tt.told)
			}
			if h.mw.InFlight() != 0 {
				t.Errorf("InFlight = %d after every handler returned", h.mw.InFlight())
			}
		})
	}
}

// countingBody counts what the middleware reads of a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// spaces is an endless body of spaces that allocates nothing.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestOversizedBody: a body of 25 MiB + 1 byte (the default limit plus one) is
// answered 413 without being buffered. Announced by Content-Length, not one
// byte of it is read and the server allocates next to nothing; sent chunked,
// reading stops one byte past the limit.
func TestOversizedBody(t *testing.T) {
	const size = DefaultMaxBodyBytes + 1
	tests := []struct {
		name     string
		chunked  bool
		maxRead  int64 // most bytes the middleware may read
		maxAlloc uint64
	}{
		{name: "Content-Length", maxRead: 0, maxAlloc: 4 << 20},
		// The buffer doubles up to the limit: 2.5 times the limit in all, and
		// more under the race detector.
		{name: "chunked", chunked: true, maxRead: DefaultMaxBodyBytes + 1, maxAlloc: 4 * DefaultMaxBodyBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
			var ran atomic.Int32
			wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })
			mw := NewMiddleware(wh, MiddlewareOptions{})
			var read atomic.Int64
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Body = countingBody{r.Body, &read}
				mw.ServeHTTP(w, r)
			})}
			go srv.Serve(ln)
			defer srv.Close()

			conn, err := net.DialTimeout("tcp", ln.Addr().String(), generous)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(generous))
			var head strings.Builder
			fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: issues\r\n%s: big\r\n%s: %s\r\n",
				DefaultPath, HeaderEvent, HeaderDelivery, HeaderSignature, validSig([]byte(`{}`)))
			if tt.chunked {
				head.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			} else {
				fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", size)
			}

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			go func() {
				// The body, streamed; writes fail once the server has
				// answered and closed, which is expected.
				if _, err := io.WriteString(conn, head.String()); err != nil {
					return
				}
				if !tt.chunked {
					io.CopyN(conn, spaces{}, size)
					return
				}
				chunk := make([]byte, 1<<20)
				spaces{}.Read(chunk)
				var line []byte
				for sent := 0; sent < size; sent += len(chunk) {
					c := chunk[:min(len(chunk), size-sent)]
					line = strconv.AppendInt(line[:0], int64(len(c)), 16)
					line = append(line, "\r\n"...)
					if _, err := conn.Write(line); err != nil {
						return
					}
					if _, err := conn.Write(c); err != nil {
						return
					}
					if _, err := io.WriteString(conn, "\r\n"); err != nil {
						return
					}
				}
				io.WriteString(conn, "0\r\n\r\n")
			}()
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			runtime.ReadMemStats(&after)
			if res.StatusCode != http.StatusRequestEntityTooLarge || string(body) != `{"error":"Payload too large: the limit is 26214400 bytes"}` {
				t.Fatalf("got %d %q", res.StatusCode, body)
			}
			if n := read.Load(); n > tt.maxRead {
				t.Errorf("the middleware read %d bytes of the body, want at most %d", n, tt.maxRead)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("read %d bytes of the body; %d bytes allocated in the test process meanwhile", read.Load(), alloc)
			if alloc > tt.maxAlloc {
				t.Errorf("%d bytes allocated while refusing the body, want at most %d", alloc, tt.maxAlloc)
			}
			if ran.Load() != 0 {
				t.Error("a handler ran")
			}
		})
	}
}

// TestDuplicateAction: with several top-level "action" members, the one that
// routes (and that Event.Action reports) is the one a decode of the payload
// sees: the last, as encoding/json into a map has it. Keys are matched
// exactly, escapes decoded; a last "action" that is not a string means no
// action at all.
func TestDuplicateAction(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		routes string // the action handlers that run; "" for none
	}{
		{"last wins", `{"action":"opened","issue":{"number":1},"action":"closed"}`, "closed"},
		{"escaped key", `{"action":"opened","\u0061ction":"closed"}`, "closed"},
		{"escaped value", `{"action":"closed","action":"op\u0065ned"}`, "opened"},
		{"other case is another key", `{"action":"opened","ACTION":"closed"}`, "opened"},
		{"nested does not count", `{"action":"opened","issue":{"action":"closed"}}`, "opened"},
		{"last is null", `{"action":"opened","action":null}`, ""},
		{"last is a number", `{"action":"opened","action":1}`, ""},
		{"last is empty", `{"action":"opened","action":""}`, ""},
		{"invalid UTF-8 replaced", "{\"action\":\"opened\",\"action\":\"clo\xffsed\"}", "clo\uFFFDsed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostile(t, MiddlewareOptions{})
			var mu sync.Mutex
			var ran []string
			record := func(what string) {
				mu.Lock()
				ran = append(ran, what)
				mu.Unlock()
			}
			for _, a := range []string{"opened", "closed", "clo\uFFFDsed"} {
				h.wh.On("issues."+a, func(ctx context.Context, e emitter.Event) error {
					record("issues." + a)
					// What a handler decoding the payload sees.
					var m map[string]any
					if err := json.Unmarshal(e.Payload, &m); err != nil {
						return err
					}
					if m["action"] != a || e.Action() != a {
						t.Errorf("handler for %q: decoded action %q, Event.Action %q", a, m["action"], e.Action())
					}
					return nil
				})
			}
			h.wh.On("issues", func(ctx context.Context, e emitter.Event) error {
				record("issues")
				if e.Action() != tt.routes {
					t.Errorf("Event.Action = %q, want %q", e.Action(), tt.routes)
				}
				return nil
			})
			res := h.roundTrip(t, hreq{body: []byte(tt.body)}.build(), "POST", nil)[0]
			if res.StatusCode != 200 {
				t.Fatalf("status %d %q", res.StatusCode, bodyOf(res))
			}
			h.finish(t)
			want := []string{"issues"}
			if tt.routes != "" {
				want = []string{"issues." + tt.routes, "issues"}
			}
			slices.Sort(ran)
			slices.Sort(want)
			if !slices.Equal(ran, want) {
				t.Errorf("ran %q, want %q", ran, want)
			}
		})
	}
}

// firstRead tells once when the middleware first reads the body: by then it has
// allocated what it will before bytes arrive.
type firstRead struct {
	io.ReadCloser
	reading chan<- struct{}
	told    bool
}

func (f *firstRead) Read(p []byte) (int, error) {
	if !f.told {
		f.told = true
		f.reading <- struct{}{}
	}
	return f.ReadCloser.Read(p)
}

// TestContentLengthWithinBudget: clients that announce bodies of the largest
// size and send one byte of them are charged for what they sent, not for
// what they announced: none is refused, the server's heap hardly grows, and
// a valid delivery beside them is answered 200.
func TestContentLengthWithinBudget(t *testing.T) {
	const conns = 8
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	mw := NewMiddleware(wh, MiddlewareOptions{})
	reading := make(chan struct{}, conns)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderDelivery) == "big" {
			r.Body = &firstRead{ReadCloser: r.Body, reading: reading}
		}
		mw.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	refused := make(chan int, conns)
	for range conns {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), generous)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: issues\r\n%s: big\r\n%s: %s\r\nContent-Length: %d\r\n\r\n{",
			DefaultPath, HeaderEvent, HeaderDelivery, HeaderSignature, validSig([]byte(`{}`)), DefaultMaxBodyBytes)
		go func() {
			c.SetReadDeadline(time.Now().Add(generous))
			if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				refused <- res.StatusCode
			}
		}()
	}
	for range conns {
		<-reading
	}
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	used := mw.unverified.Used()
	t.Logf("%d connections announcing %d bytes and sending 1: budget holds %d KiB, heap in use grew by %d KiB", conns, DefaultMaxBodyBytes, used>>10, grew>>10)
	if used > conns*firstBodyBuffer {
		t.Errorf("budget holds %d bytes for %d connections that sent one byte each; want at most %d", used, conns, conns*firstBodyBuffer)
	}
	if grew > 8<<20 {
		t.Errorf("heap in use grew by %d MiB for %d connections that sent one byte each", grew>>20, conns)
	}
	client := &http.Client{Timeout: generous}
	if code, msg := post(t, client, "http://"+ln.Addr().String()+DefaultPath, "issues", "valid", []byte(`{"action":"opened"}`)); code != http.StatusOK {
		t.Errorf("valid delivery beside them: %d %s", code, msg)
	}
	select {
	case code := <-refused:
		t.Errorf("a held body was answered %d before its end", code)
	default:
	}
}
