package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/signing"
)

// FuzzMiddleware sends arbitrary requests through the middleware: it must never
// panic, and must always answer one of the documented statuses with the
// documented kind of body.
func FuzzMiddleware(f *testing.F) {
	const maxBody = 4096
	wh, err := New(Options{Secret: secret, AdditionalSecrets: []string{"old"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		if bytes.Contains(e.Payload, []byte("fail")) {
			return errors.New("failed")
		}
		if bytes.Contains(e.Payload, []byte("status")) {
			return WithStatus(int(e.Payload[len(e.Payload)-1])*3, errors.New("status"))
		}
		return nil
	})
	m := NewMiddleware(wh, MiddlewareOptions{MaxBodyBytes: maxBody})

	// sigMode: 0 valid, 1 valid for the additional secret, 2 the given string, 3 absent.
	f.Add("POST", DefaultPath, "application/json", "issues", "d1", uint8(0), "", []byte(`{"action":"opened"}`), false)
	f.Add("POST", DefaultPath+"/?x", "Application/Json; charset=utf-8", "push", "d2", uint8(1), "", []byte(`{"fail":1}`), true)
	f.Add("POST", "/api/forge%2Fwebhooks", "application/json", "x", "d", uint8(0), "", []byte(`{}`), false)
	f.Add("GET", DefaultPath, "", "", "", uint8(3), "", []byte(nil), false)
	f.Add("POST", DefaultPath, "text/plain", "issues", "d", uint8(2), "sha256=00", []byte(`{}`), false)
	f.Add("POST", DefaultPath, "application/json", "", "d", uint8(0), "", []byte(`[]`), false)
	f.Add("POST", DefaultPath, "application/json", "issues", "d", uint8(0), "", []byte(`{"status":1}`+"\xa5"), false)
	f.Add("POST", DefaultPath, "application/json", "issues", "d", uint8(0), "", bytes.Repeat([]byte("a"), maxBody+1), true)
	for i, ex := range corpus.All() {
		if i%40 == 0 {
			f.Add("POST", DefaultPath, "application/json", ex.Event, "d", uint8(0), "", ex.Body, i%80 == 0)
		}
	}
	allowed := map[int]bool{200: true, 400: true, 404: true, 413: true, 415: true, 500: true}
	f.Fuzz(func(t *testing.T, method, target, contentType, event, delivery string, sigMode uint8, sig string, body []byte, chunked bool) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return // net/http refuses such a request line before any handler
		}
		switch sigMode % 4 {
		case 0:
			sig, _ = wh.Sign(body)
		case 1:
			sig, _ = signing.Sign("old", body)
		case 3:
			sig = ""
		}
		r := &http.Request{Method: method, URL: u, RequestURI: target, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
		if chunked {
			r.ContentLength = -1
		}
		r = r.WithContext(context.Background())
		for k, v := range map[string]string{"Content-Type": contentType, HeaderEvent: event, HeaderDelivery: delivery, HeaderSignature: sig} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, r)
		code := rec.Code
		if !allowed[code] && !(code >= 400 && code <= 599 && bytes.Contains(body, []byte("status"))) {
			t.Fatalf("status %d for %s %q", code, method, target)
		}
		switch {
		case code == 200:
			if rec.Body.String() != "ok\n" {
				t.Fatalf("200 with body %q", rec.Body)
			}
			if ok, _ := wh.Verify(body, sig); !ok && sigMode%4 != 1 {
				t.Fatal("200 without a valid signature")
			}
		default:
			var e struct{ Error *string }
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d with body %q (%v)", code, rec.Body, err)
			}
		}
	})
}
