package catchup

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodeAttempts decodes one full page of the log (100 attempts).
func BenchmarkDecodeAttempts(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 100 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"id":%d,"guid":"0b989ba4-242f-11e5-81e1-c7b6966d%04d","delivered_at":"2026-03-14T11:%02d:16Z","redelivery":false,"duration":0.27,"status":"failed to connect to host","status_code":0,"event":"issues","action":"opened","installation_id":123,"repository_id":456,"throttled_at":null}`, 1000+i, i, i%60)
	}
	sb.WriteString("]")
	page := []byte(sb.String())
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeAttempts(page); err != nil {
			b.Fatal(err)
		}
	}
}
