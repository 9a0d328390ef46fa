package relay

import (
	"encoding/base64"
	"strings"
	"testing"
)

// BenchmarkParseMessage parses the message of a 1 MiB delivery, as forgehooks
// proxy sends it (body and bodyB).
func BenchmarkParseMessage(b *testing.B) {
	body := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	data := []byte(`{"x-forge-event":"push","content-length":"1048586","body":` + body +
		`,"bodyB":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `","query":{},"timestamp":1}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMessage(data); err != nil {
			b.Fatal(err)
		}
	}
}
