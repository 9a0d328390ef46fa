package payloads

// A value member is a member the schema calls required and not nullable: its
// field is not a pointer, so the field alone cannot tell a member that was
// absent (or null) from one that held the zero value. The generator numbers a
// struct's value members from 0 in schema order; while a struct is decoded, a
// seenSet records which of them were read with a value, and setAbsent then
// keeps the others in extra.absent, so that encoding leaves them out as they
// came.

// seenSet has bit i set when value member i was read with a value. The
// generator refuses a struct with more value members than it holds.
type seenSet [2]uint64

func (s *seenSet) mark(i int)     { s[i/64] |= 1 << (i % 64) }
func (s *seenSet) unmark(i int)   { s[i/64] &^= 1 << (i % 64) }
func (s *seenSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

// read starts value member i: null is consumed and reported false (the member
// stays absent); any other value marks i, and the caller reads it.
func (s *seenSet) read(d *decoder, i int) bool {
	if d.null() {
		return false
	}
	s.mark(i)
	return true
}

// decSeen decodes value member i into *p with its type's decode method. A
// member that comes again replaces the first whole, since decode reads into a
// zero value.
func decSeen[T any, PT interface {
	*T
	decode(*decoder) error
}](p *T, d *decoder, seen *seenSet, i int) error {
	if d.null() {
		return nil
	}
	if seen.has(i) {
		var zero T
		*p = zero
	}
	seen.mark(i)
	return PT(p).decode(d)
}

// decStringSeen decodes string value member i into *p. Strings are the most
// common members, so their fast path is repeated here rather than reached
// through a second call.
func decStringSeen(p *string, d *decoder, seen *seenSet, i int) error {
	if buf, j := d.buf, d.pos; j < len(buf) && buf[j] == '"' && d.shared() {
		if k := stopAt(buf, j+1); k >= 0 && buf[k] == '"' {
			d.pos = k + 1
			*p = d.src[j+1 : k]
			seen.mark(i)
			return nil
		}
	}
	if !seen.read(d, i) {
		return nil
	}
	return decString(p, d)
}

// decInt64Seen decodes integer value member i into *p.
func decInt64Seen(p *int64, d *decoder, seen *seenSet, i int) error {
	if !seen.read(d, i) {
		return nil
	}
	return decInt64(p, d)
}

// decBoolSeen decodes boolean value member i into *p.
func decBoolSeen(p *bool, d *decoder, seen *seenSet, i int) error {
	if !seen.read(d, i) {
		return nil
	}
	return decBool(p, d)
}

// setAbsent records which of the n value members were not seen with a value,
// a word at a time: a struct of a hundred value members costs two
// comparisons, not a hundred, when all were there. It stays a call, made once
// per decoded struct: inlined, its loop would be repeated in every generated
// decode method.
//
//go:noinline
func (x *extra) setAbsent(seen *seenSet, n int) {
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
