package app

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"2", 2 * time.Second, true},
		{" 60 ", time.Minute, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"99999999999999999999", 0, false},
		{"9223372036854775807", MaxServerWait, true},
		{"Sat, 14 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sat, 14 Mar 2026 11:00:00 GMT", 0, true},
		{"Sun, 14 Mar 2100 12:00:00 GMT", MaxServerWait, true},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		d, ok := parseRetryAfter(tt.in, now)
		if d != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, d, ok, tt.want, tt.ok)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	reset := now.Add(30 * time.Minute).Unix()
	h := func(kv ...string) http.Header {
		m := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			m.Set(kv[i], kv[i+1])
		}
		return m
	}
	rs := func() string { return strconv.FormatInt(reset, 10) }
	tests := []struct {
		name    string
		code    int
		header  http.Header
		body    string
		limited bool
		wait    time.Duration
		reason  string
	}{
		{"ok", 200, h("X-RateLimit-Remaining", "10", "X-RateLimit-Reset", rs()), "", false, 0, ""},
		{"last one served", 200, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", rs()), "", false, 30 * time.Minute, "X-RateLimit-Remaining: 0"},
		{"secondary with Retry-After", 403, h("Retry-After", "2", "X-RateLimit-Remaining", "4000"), `{"message":"You have exceeded a secondary rate limit."}`, true, 2 * time.Second, "Retry-After"},
		{"429 Retry-After 0", 429, h("Retry-After", "0"), "", true, time.Second, "Retry-After"},
		{"primary exhausted", 403, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", rs()), `{"message":"API rate limit exceeded"}`, true, 30 * time.Minute, "X-RateLimit-Reset"},
		{"secondary without delay", 403, h("X-RateLimit-Remaining", "4000"), `{"message":"You have exceeded a secondary rate limit"}`, true, time.Minute, "secondary limit"},
		{"refusal", 403, h("X-RateLimit-Remaining", "4000"), `{"message":"Resource not accessible by integration"}`, false, 0, ""},
		{"malformed headers", 403, h("Retry-After", "later", "X-RateLimit-Remaining", "x", "X-RateLimit-Reset", "-5"), `{}`, false, 0, ""},
		{"5xx", 502, h(), "", false, 0, ""},
		{"served, reset in year 9999", 200, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "253402300799"), "", false, MaxServerWait, "X-RateLimit-Remaining: 0"},
		{"refused, reset in year 9999", 403, h("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "253402300799"), "", true, MaxServerWait, "X-RateLimit-Reset"},
		{"Retry-After 999999999", 429, h("Retry-After", "999999999"), "", true, MaxServerWait, "Retry-After"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &http.Response{StatusCode: tt.code, Header: tt.header, Body: io.NopCloser(strings.NewReader(tt.body))}
			th := classify(res, now)
			if th.limited != tt.limited || th.wait != tt.wait || th.reason != tt.reason {
				t.Errorf("classify = %+v, want limited %v wait %v reason %q", th, tt.limited, tt.wait, tt.reason)
			}
			if b, _ := io.ReadAll(res.Body); string(b) != tt.body {
				t.Errorf("body after classify %q, want %q", b, tt.body)
			}
		})
	}
}
