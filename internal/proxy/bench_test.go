package proxy

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkEncodeMessage builds the message of a 1 MiB compact delivery.
func BenchmarkEncodeMessage(b *testing.B) {
	body := []byte(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	r := httptest.NewRequest("POST", "http://p.test/c", bytes.NewReader(body))
	r.Header.Set("X-Forge-Event", "push")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		encodeMessage(r, body, time.UnixMilli(1))
	}
}
