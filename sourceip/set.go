package sourceip

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"sort"
)

// u128 is an address in its 16-byte form (an IPv4 address as its
// IPv4-mapped IPv6 form), as a number, so that ranges compare and sort.
type u128 struct{ hi, lo uint64 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

func u128Of(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// span is the addresses from lo to hi, both included.
type span struct{ lo, hi u128 }

// spanOf is the span of p, in the 16-byte form: an IPv4 prefix a/n is
// ::ffff:a/(96+n), so that it and an IPv4-mapped prefix are the same span.
func spanOf(p netip.Prefix) span {
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	lo := u128Of(p.Masked().Addr())
	hi := lo
	switch {
	case bits <= 0:
		hi = u128{^uint64(0), ^uint64(0)}
	case bits < 64:
		hi = u128{lo.hi | ^uint64(0)>>bits, ^uint64(0)}
	case bits < 128:
		hi.lo |= ^uint64(0) >> (bits - 64)
	}
	return span{lo, hi}
}

// set is a set of prefixes as sorted, disjoint spans: a lookup is a binary
// search, O(log n) however many ranges the forge publishes.
type set []span

func newSet(ps []netip.Prefix) set {
	spans := make([]span, 0, len(ps))
	for _, p := range ps {
		if p.IsValid() {
			spans = append(spans, spanOf(p))
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo.cmp(b.lo) })
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo.cmp(out[n-1].hi) <= 0 {
			if s.hi.cmp(out[n-1].hi) > 0 {
				out[n-1].hi = s.hi
			}
			continue
		}
		out = append(out, s)
	}
	return slices.Clip(out)
}

// contains reports whether a is in the set. An IPv4 address and its
// IPv4-mapped form are the same address; a zone is ignored (it names an
// interface, not an address).
func (s set) contains(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	x := u128Of(a)
	i := sort.Search(len(s), func(i int) bool { return s[i].lo.cmp(x) > 0 })
	return i > 0 && x.cmp(s[i-1].hi) <= 0
}
