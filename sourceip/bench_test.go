package sourceip

import (
	"math/rand/v2"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// benchRanges returns n ranges of the sizes an allow-list holds: IPv4 /16
// to /32 and IPv6 /32 to /64, half of each.
func benchRanges(n int) []netip.Prefix {
	r := rand.New(rand.NewPCG(3, 4))
	ps := make([]netip.Prefix, n)
	for i := range ps {
		var b [16]byte
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if i%2 == 0 {
			ps[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte(b[:4])), 16+r.IntN(17)).Masked()
		} else {
			ps[i] = netip.PrefixFrom(netip.AddrFrom16(b), 32+r.IntN(33)).Masked()
		}
	}
	return ps
}

// BenchmarkLookup230k: one lookup among 230,000 ranges, by the sorted set
// (what Filter uses) and, for comparison, by a scan of every prefix.
func BenchmarkLookup230k(b *testing.B) {
	ps := benchRanges(230_000)
	addrs := make([]netip.Addr, 1024)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range addrs {
		addrs[i] = randAddr(r, ps)
	}
	b.Run("set", func(b *testing.B) {
		s := newSet(ps)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			s.contains(addrs[i%len(addrs)])
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			a := addrs[i%len(addrs)].Unmap()
			for _, p := range ps {
				if p.Contains(a) {
					break
				}
			}
		}
	})
}

// BenchmarkFilter230k: Filter.Allowed on a request, peer parsing included,
// with 230,000 ranges; and Set, which sorts them.
func BenchmarkFilter230k(b *testing.B) {
	ps := benchRanges(230_000)
	f := New(Options{})
	b.Run("Allowed", func(b *testing.B) {
		f.Set(ps)
		req := httptest.NewRequest("POST", "/", nil)
		req.RemoteAddr = "[2001:db8::1]:443"
		b.ReportAllocs()
		for b.Loop() {
			f.Allowed(req)
		}
	})
	b.Run("Set", func(b *testing.B) {
		for b.Loop() {
			f.Set(ps)
		}
	})
}
