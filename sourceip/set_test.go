package sourceip

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// contains16 is the oracle: p contains a once both are in their 16-byte
// form, tried prefix by prefix.
func contains16(ps []netip.Prefix, a netip.Addr) bool {
	a16 := netip.AddrFrom16(a.As16())
	for _, p := range ps {
		bits := p.Bits()
		if p.Addr().Is4() {
			bits += 96
		}
		if netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), bits).Contains(a16) {
			return true
		}
	}
	return false
}

func randAddr(r *rand.Rand, near []netip.Prefix) netip.Addr {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	switch r.IntN(4) {
	case 0:
		return netip.AddrFrom16(b)
	case 1:
		return netip.AddrFrom4([4]byte(b[:4]))
	default: // close to a range, so that most lookups land near an edge
		if len(near) == 0 {
			return netip.AddrFrom16(b)
		}
		p := near[r.IntN(len(near))]
		a := p.Addr()
		for range r.IntN(3) {
			if r.IntN(2) == 0 {
				a = a.Prev()
			} else {
				a = a.Next()
			}
		}
		if !a.IsValid() {
			return p.Addr()
		}
		if r.IntN(3) == 0 && a.Is4() {
			return netip.AddrFrom16(a.As16()) // the mapped form
		}
		return a
	}
}

func randPrefix(r *rand.Rand) netip.Prefix {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	switch r.IntN(3) {
	case 0:
		return netip.PrefixFrom(netip.AddrFrom4([4]byte(b[:4])), r.IntN(33)).Masked()
	case 1:
		return netip.PrefixFrom(netip.AddrFrom16(b), r.IntN(129)).Masked()
	default:
		return netip.PrefixFrom(netip.AddrFrom16(netip.AddrFrom4([4]byte(b[:4])).As16()), 96+r.IntN(33)).Masked()
	}
}

// TestSetMatchesLinear: the sorted, merged set answers as a scan of every
// prefix does, for overlapping, nested, mapped and edge cases.
func TestSetMatchesLinear(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := r.IntN(40)
		if round%50 == 0 {
			n = 2000
		}
		ps := make([]netip.Prefix, n)
		for i := range ps {
			ps[i] = randPrefix(r)
		}
		s := newSet(ps)
		for range 500 {
			a := randAddr(r, ps)
			if got, want := s.contains(a), contains16(ps, a); got != want {
				t.Fatalf("round %d: %s in %v: %v, want %v", round, a, ps, got, want)
			}
		}
		for i := 1; i < len(s); i++ {
			if s[i-1].hi.cmp(s[i].lo) >= 0 {
				t.Fatalf("spans %d and %d overlap", i-1, i)
			}
		}
	}
}

// TestSetEdges: the ends of a range are in it, their neighbours are not;
// the widest and narrowest ranges of both families.
func TestSetEdges(t *testing.T) {
	t.Parallel()
	mp := netip.MustParsePrefix
	ma := netip.MustParseAddr
	for _, tc := range []struct {
		ranges []netip.Prefix
		in     []string
		out    []string
	}{
		{[]netip.Prefix{mp("192.0.2.0/24")}, []string{"192.0.2.0", "192.0.2.255", "::ffff:192.0.2.128"}, []string{"192.0.1.255", "192.0.3.0", "::192.0.2.1", "2001:db8::"}},
		{[]netip.Prefix{mp("::ffff:192.0.2.0/120")}, []string{"192.0.2.0", "192.0.2.255"}, []string{"192.0.3.0"}},
		{[]netip.Prefix{mp("0.0.0.0/0")}, []string{"0.0.0.0", "255.255.255.255", "::ffff:1.2.3.4"}, []string{"::1", "::fffe:ffff:ffff", "::1:0:0:0"}},
		{[]netip.Prefix{mp("::/0")}, []string{"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "1.2.3.4"}, nil},
		{[]netip.Prefix{mp("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), mp("::/128")}, []string{"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}, []string{"::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"}},
		{[]netip.Prefix{mp("2001:db8::/63"), mp("2001:db8::/64"), mp("2001:db8:0:1::/65")}, []string{"2001:db8:0:1:ffff:ffff:ffff:ffff"}, []string{"2001:db8:0:2::"}},
		{[]netip.Prefix{mp("10.0.0.0/8"), mp("10.1.0.0/16"), mp("11.0.0.0/8")}, []string{"10.1.2.3", "11.255.255.255"}, []string{"12.0.0.0", "9.255.255.255"}},
		{nil, nil, []string{"192.0.2.1", "::"}},
		{[]netip.Prefix{{}}, nil, []string{"192.0.2.1", "::"}},
	} {
		s := newSet(tc.ranges)
		for _, a := range tc.in {
			if !s.contains(ma(a)) {
				t.Errorf("%v: %s not in it", tc.ranges, a)
			}
		}
		for _, a := range tc.out {
			if s.contains(ma(a)) {
				t.Errorf("%v: %s in it", tc.ranges, a)
			}
		}
		if s.contains(netip.Addr{}) {
			t.Errorf("%v: the zero Addr in it", tc.ranges)
		}
	}
}
