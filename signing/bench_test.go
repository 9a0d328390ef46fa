package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"testing"
)

// BenchmarkVerify compares Verify with the bare crypto/hmac work it cannot avoid
// (keying, hashing, Sum, hmac.Equal against an already decoded digest), at each
// size. The target is Verify's throughput ≥ 0.9× the bare figure.
func BenchmarkVerify(b *testing.B) {
	const secret = "It's a Secret to Everybody"
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"8KiB", 8 << 10}, {"1MiB", 1 << 20}, {"25MiB", 25 << 20}} {
		payload := make([]byte, size.n)
		for i := range payload {
			payload[i] = byte('a' + i%26)
		}
		sig, err := Sign(secret, payload)
		if err != nil {
			b.Fatal(err)
		}
		want, _ := ParseSignature(sig)
		b.Run(fmt.Sprintf("size=%s/impl=Verify", size.name), func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := Verify(secret, payload, sig); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%s/impl=hmac", size.name), func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for b.Loop() {
				mac := hmac.New(sha256.New, []byte(secret))
				mac.Write(payload)
				if !hmac.Equal(mac.Sum(nil), want[:]) {
					b.Fatal("mismatch")
				}
			}
		})
	}
}

func BenchmarkParseSignature(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseSignature(knownAnswer); !ok {
			b.Fatal("not ok")
		}
	}
}
