package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParsePrivateKey: any input gives a key or an error, never a panic, and
// an error never quotes the input.
func FuzzParsePrivateKey(f *testing.F) {
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	p8, _ := x509.MarshalPKCS8PrivateKey(k)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x00}}))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte(`-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----`))
	f.Add([]byte("not a key"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := ParsePrivateKey(data)
		if (key == nil) == (err == nil) {
			t.Fatalf("key %v, err %v", key != nil, err)
		}
		if err != nil {
			if len(data) >= 24 && strings.Contains(err.Error(), string(data[len(data)-24:])) {
				t.Errorf("the error quotes the input: %v", err)
			}
			return
		}
		if key.N.BitLen() < minKeyBits {
			t.Errorf("a %d-bit key accepted", key.N.BitLen())
		}
		_ = envPEM(string(data))
	})
}

// FuzzRateLimitHeaders: any Retry-After and X-RateLimit-* headers on any
// status give a bounded, non-negative wait, and leave the body whole.
func FuzzRateLimitHeaders(f *testing.F) {
	f.Add(403, "2", "0", "1773489600", `{"message":"secondary rate limit"}`)
	f.Add(429, "Sat, 14 Mar 2026 12:00:30 GMT", "", "", "")
	f.Add(200, "", "0", "99999999999999", "")
	f.Add(403, "-1", "-1", "0", "rate limit")
	f.Add(503, "9223372036854775807", "x", "1e9", "")
	f.Fuzz(func(t *testing.T, code int, retryAfter, remaining, reset, body string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
		if d, ok := parseRetryAfter(retryAfter, now); d < 0 || d > MaxServerWait || !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, %v", retryAfter, d, ok)
		}
		res := &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}
		th := classify(res, now)
		if th.wait < 0 || th.limited && th.wait < time.Second || th.wait > 0 && th.reason == "" {
			t.Fatalf("classify = %+v", th)
		}
		if th.limited && code != 403 && code != 429 {
			t.Fatalf("status %d classified as a rate limit", code)
		}
		b, _ := io.ReadAll(res.Body)
		if !bytes.Equal(b, []byte(body)) {
			t.Fatal("classify lost part of the body")
		}
	})
}

// FuzzRefusal: any 403 body gives a *RefusedError only when it says
// "Resource not accessible by integration", and otherwise leaves the body
// whole for the caller; the error's message is clipped.
func FuzzRefusal(f *testing.F) {
	f.Add([]byte(`{"message":"Resource not accessible by integration","documentation_url":"https://docs.example"}`))
	f.Add([]byte(`{"message":"Must have admin rights to Repository."}`))
	f.Add([]byte(`resource NOT accessible by integration`))
	f.Add(bytes.Repeat([]byte("x"), maxPeek+10))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, _ := http.NewRequest(http.MethodPost, "https://api.example/repos/o/r/issues/1/labels", nil)
		res := &http.Response{StatusCode: http.StatusForbidden, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
		ref := refusal(req, res, 7)
		says := bytes.Contains(bytes.ToLower(body[:min(len(body), maxPeek)]), notAccessible)
		if (ref != nil) != says {
			t.Fatalf("refusal = %v for a body that says it: %v", ref, says)
		}
		if ref != nil {
			if len(ref.Message) > 104 || !ref.Permanent() || ref.Installation != 7 {
				t.Fatalf("refusal %+v", ref)
			}
			return
		}
		got, err := io.ReadAll(res.Body)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("the body after the peek is %d bytes (%v), want the %d sent", len(got), err, len(body))
		}
	})
}
