package webhooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/signing"
)

// teeBody keeps what the middleware reads of a body.
type teeBody struct {
	io.ReadCloser
	got bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.got.Write(p[:n])
	return n, err
}

// FuzzMiddlewareRaw feeds the middleware requests parsed by net/http from
// arbitrary bytes, as a server reads them off a connection: the request line,
// headers, chunked and fixed-length bodies, all hostile. It never panics; it
// answers only documented statuses; an error answer is a JSON error; and a
// handler runs only for a body whose signature header verifies, seeing exactly
// the bytes read.
func FuzzMiddlewareRaw(f *testing.F) {
	const maxBody = 4096
	wh, err := New(Options{Secret: secret, AdditionalSecrets: []string{"old"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	var mu sync.Mutex
	var seen [][]byte
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		mu.Lock()
		seen = append(seen, bytes.Clone(e.Payload))
		mu.Unlock()
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{MaxBodyBytes: maxBody, Timeout: -1})

	// Seeds: the hostile matrix's requests that fit, and valid deliveries of
	// real payloads.
	for _, q := range []hreq{
		{}, {chunked: true}, {body: []byte(`null`)}, {body: []byte{}}, {body: nest(50)},
		{body: append([]byte("\xef\xbb\xbf"), defaultBody...)},
		{body: []byte(`{"action":"opened","action":"closed"}`)},
		{sig: strings.ToUpper(validSig(defaultBody))}, {sig: "<valid>0"},
		{sig: "sha1=" + hmacHex(sha1Hash, secret, defaultBody)},
		{headers: []string{HeaderEvent, "<add>:push"}}, {headers: []string{HeaderDelivery, "<del>"}},
		{headers: []string{"Content-Type", "APPLICATION/json; charset=utf-8"}},
		{headers: []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{method: "GET"}, {method: "HEAD"}, {target: DefaultPath + "//?a=%zz"},
		{target: "/api/forge/web%68ooks"}, {target: "/api%2Fforge/webhooks"}, {target: "*"},
		{target: "http://127.0.0.1" + DefaultPath},
	} {
		f.Add(q.build())
	}
	f.Add([]byte("POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{}"))
	f.Add([]byte("POST " + DefaultPath + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
		HeaderEvent + ": issues\r\n" + HeaderDelivery + ": d\r\n" + HeaderSignature + ": " + validSig([]byte(`{}`)) + "\r\n" +
		"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"))
	for i, ex := range corpus.All() {
		if i%64 == 0 && len(ex.Body) <= maxBody {
			f.Add(hreq{body: ex.Body, event: ex.Event}.build())
		}
	}
	allowed := map[int]bool{200: true, 400: true, 404: true, 413: true, 415: true, 500: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // net/http answers such bytes itself, before any handler
		}
		body := &teeBody{ReadCloser: r.Body}
		r.Body = body
		mu.Lock()
		seen = seen[:0]
		mu.Unlock()
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)

		code := rec.Code
		if !allowed[code] {
			t.Fatalf("status %d", code)
		}
		if code != 200 {
			var e struct{ Error *string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d with body %q", code, rec.Body)
			}
		} else if rec.Body.String() != "ok\n" {
			t.Fatalf("200 with body %q", rec.Body)
		}
		mu.Lock()
		defer mu.Unlock()
		if (code == 200) != (len(seen) == 1) || len(seen) > 1 {
			t.Fatalf("status %d, and the handler ran %d times", code, len(seen))
		}
		if len(seen) == 0 {
			return
		}
		if !bytes.Equal(seen[0], body.got.Bytes()) {
			t.Fatalf("the handler saw %q, the middleware read %q", seen[0], body.got.Bytes())
		}
		sig := strings.TrimSpace(r.Header.Get(HeaderSignature))
		ok, _ := signing.VerifyWithFallback(secret, seen[0], sig, "old")
		if !ok {
			t.Fatalf("a handler ran for %q with signature %q, which does not verify", seen[0], sig)
		}
	})
}
