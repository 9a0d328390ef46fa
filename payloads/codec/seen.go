package payloads

// A value member is a member the schema calls required and not nullable: its
// field is not a pointer, so the field alone cannot tell a member that was
// absent (or null) from one that held the zero value. The generator numbers a
// struct's value members from 0 in schema order; while a struct is decoded, a
// SeenSet records which of them were read with a value, and SetAbsent then
// keeps the others in Extra.absent, so that encoding leaves them out as they
// came.

// SeenSet has bit i set when value member i was read with a value. The
// generator refuses a struct with more value members than it holds.
type SeenSet [2]uint64

func (s *SeenSet) mark(i int)     { s[i/64] |= 1 << (i % 64) }
func (s *SeenSet) unmark(i int)   { s[i/64] &^= 1 << (i % 64) }
func (s *SeenSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

// Read starts value member i: null is consumed and reported false (the member
// stays absent); any other value marks i, and the caller reads it.
func (s *SeenSet) Read(d *Decoder, i int) bool {
	if d.null() {
		return false
	}
	s.mark(i)
	return true
}

// DecSeen decodes value member i into *p with dec, its type's decoder. A
// member that comes again replaces the first whole, since decode reads into a
// zero value.
func DecSeen[T any](p *T, d *Decoder, seen *SeenSet, i int, dec func(*T, *Decoder) error) error {
	if d.null() {
		return nil
	}
	if seen.has(i) {
		var zero T
		*p = zero
	}
	seen.mark(i)
	return dec(p, d)
}

// DecStringSeen decodes string value member i into *p. Strings are the most
// common members, so their fast path is repeated here rather than reached
// through a second call.
func DecStringSeen(p *string, d *Decoder, seen *SeenSet, i int) error {
	if buf, j := d.buf, d.pos; j < len(buf) && buf[j] == '"' && d.shared() {
		if k := stopAt(buf, j+1); k >= 0 && buf[k] == '"' {
			d.pos = k + 1
			*p = d.src[j+1 : k]
			seen.mark(i)
			return nil
		}
	}
	if !seen.Read(d, i) {
		return nil
	}
	return DecString(p, d)
}

// DecInt64Seen decodes integer value member i into *p.
func DecInt64Seen(p *int64, d *Decoder, seen *SeenSet, i int) error {
	if !seen.Read(d, i) {
		return nil
	}
	return DecInt64(p, d)
}

// DecBoolSeen decodes boolean value member i into *p.
func DecBoolSeen(p *bool, d *Decoder, seen *SeenSet, i int) error {
	if !seen.Read(d, i) {
		return nil
	}
	return DecBool(p, d)
}

// SetAbsent records in x which of the n value members were not seen with a value,
// a word at a time: a struct of a hundred value members costs two
// comparisons, not a hundred, when all were there. It stays a call, made once
// per decoded struct: inlined, its loop would be repeated in every generated
// decode function.
//
//go:noinline
func SetAbsent(x *Extra, seen *SeenSet, n int) {
	for w := 0; w < (n+63)/64; w++ {
		want := ^uint64(0)
		if rest := n - 64*w; rest < 64 {
			want = 1<<rest - 1
		}
		if missing := want &^ seen[w]; missing != 0 {
			if x.absent == nil {
				x.absent = make([]uint64, (n+63)/64)
			}
			x.absent[w] |= missing
		}
	}
}
