package jsonscan

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// BenchmarkScan compares Scan, and Lookup, with the HMAC over the same bytes
// (what every delivery pays anyway) and with json.Valid. The target is a small factor of
// the HMAC, well under json.Valid.
func BenchmarkScan(b *testing.B) {
	var all [][]byte
	var pr []byte
	for _, ex := range corpus.Public() {
		all = append(all, ex.Body)
		if ex.Event == "pull_request" && len(ex.Body) > len(pr) {
			pr = ex.Body
		}
	}
	// About 1 MiB: real payloads, one after another in a top-level array member.
	var big bytes.Buffer
	big.WriteString(`{"action":"batched","items":[`)
	for i := 0; big.Len() < 1<<20; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		big.Write(all[i%len(all)])
	}
	big.WriteString(`]}`)
	inputs := []struct {
		name   string
		bodies [][]byte
	}{{"corpus", all}, {"pull_request", [][]byte{pr}}, {"1MiB", [][]byte{big.Bytes()}}}
	for _, in := range inputs {
		var size int64
		for _, body := range in.bodies {
			size += int64(len(body))
		}
		run := func(name string, fn func([]byte)) {
			b.Run("input="+in.name+"/impl="+name, func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					for _, body := range in.bodies {
						fn(body)
					}
				}
			})
		}
		run("Scan", func(body []byte) {
			if _, err := Scan(body); err != nil {
				b.Fatal(err)
			}
		})
		// Lookup is serve's pass for its log line: Scan's work and three paths.
		var res [3]Result
		run("Lookup", func(body []byte) {
			if err := Lookup(body, logPaths, res[:]); err != nil {
				b.Fatal(err)
			}
		})
		run("hmac", func(body []byte) {
			mac := hmac.New(sha256.New, []byte("secret"))
			mac.Write(body)
			mac.Sum(nil)
		})
		run("json.Valid", func(body []byte) {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		})
	}
}
