package sourceip

import (
	"net/netip"
	"testing"
)

// FuzzParseMetaHooks: any answer either fails or yields valid, masked
// ranges no wider than the bounds, IPv4-mapped ones as IPv4, each of which
// reads back as itself; every refused range is wider than the bounds.
func FuzzParseMetaHooks(f *testing.F) {
	for _, s := range []string{
		`{"hooks":["192.30.252.0/22","2a0a:a440::/29","203.0.113.5"]}`,
		`{"hooks":["0.0.0.0/0","::/0","::ffff:0:0/96","::/64"]}`,
		`{"hooks":["::ffff:192.0.2.0/120","::ffff:10.0.0.0/103","10.0.0.0/8"]}`,
		`{"hooks":[" 192.0.2.77/24 ","fe80::1%eth0","1.2.3.4/33"]}`,
		`{"hooks":[]}`, `{"hooks":null}`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rs, refused, err := ParseMetaHooks(body)
		if err != nil {
			if len(rs) != 0 {
				t.Fatalf("ranges %v with error %v", rs, err)
			}
			return
		}
		if len(rs) == 0 {
			t.Fatal("no ranges, no error")
		}
		for _, p := range rs {
			if !p.IsValid() || p != p.Masked() || p.Addr().Zone() != "" {
				t.Fatalf("range %v: not valid and masked", p)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				t.Fatalf("range %v: mapped, not IPv4", p)
			}
			if p.Addr().Is4() && p.Bits() < MinMetaBits4 || p.Addr().Is6() && p.Bits() < MinMetaBits6 {
				t.Fatalf("range %v: wider than the bounds", p)
			}
			if p.Addr().Is6() && p.Bits() < 96 && p.Contains(mappedSpace) {
				t.Fatalf("range %v: holds every IPv4 address", p)
			}
			if q, err := ParsePrefix(p.String()); err != nil || q != p {
				t.Fatalf("range %v reads back as %v, %v", p, q, err)
			}
		}
		for _, p := range refused {
			if !tooWide(p) {
				t.Fatalf("refused %v, not too wide", p)
			}
		}
	})
}

// FuzzSet: the sorted set answers as a scan of every prefix does. The input
// is read as prefixes (17 bytes: 16 of address, 1 of bits; the address is
// IPv4 when the bits byte is odd) and then addresses (16 bytes each).
func FuzzSet(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xc0\x00\x02\x00\xc1"), uint8(1))
	f.Add(make([]byte, 17*3+16*4), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		var ps []netip.Prefix
		for range int(n) {
			if len(data) < 17 {
				break
			}
			a := netip.AddrFrom16([16]byte(data[:16]))
			bits := int(data[16] >> 1)
			if data[16]&1 == 1 {
				a = netip.AddrFrom4([4]byte(data[12:16]))
				bits %= 33
			} else {
				bits %= 129
			}
			ps = append(ps, netip.PrefixFrom(a, bits).Masked())
			data = data[17:]
		}
		s := newSet(ps)
		for len(data) >= 16 {
			b := [16]byte(data[:16])
			data = data[16:]
			for _, a := range []netip.Addr{netip.AddrFrom16(b), netip.AddrFrom4([4]byte(b[12:])), netip.AddrFrom16(b).Next(), netip.AddrFrom16(b).Prev()} {
				if !a.IsValid() {
					continue
				}
				if got, want := s.contains(a), contains16(ps, a); got != want {
					t.Fatalf("%s in %v: %v, want %v", a, ps, got, want)
				}
			}
		}
	})
}
