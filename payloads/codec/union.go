package payloads

// Match says when a JSON value is a union's variant (gen.Match, as generated):
// every condition given must hold; no condition at all always holds.
type Match struct {
	// JSON is the value's JSON kind: object, array, string, number, integer
	// (a number without fraction or exponent) or boolean; "" for any.
	JSON string
	// Has and Lacks are keys an object must have and must not have.
	Has, Lacks []string
	// Equals holds key, value pairs: the object's member key must be a string
	// equal to value.
	Equals []string
}

// Matches reports whether the next value satisfies m, without consuming it.
func (d *Decoder) Matches(m *Match) bool {
	c := d.peek()
	switch m.JSON {
	case "":
	case "object":
		if c != '{' {
			return false
		}
	case "array":
		if c != '[' {
			return false
		}
	case "string":
		if c != '"' {
			return false
		}
	case "boolean":
		if c != 't' && c != 'f' {
			return false
		}
	case "number", "integer":
		if c != '-' && (c < '0' || c > '9') {
			return false
		}
		if m.JSON == "integer" {
			probe := *d
			b, err := probe.number()
			if err != nil {
				return false
			}
			for _, ch := range b {
				if ch == '.' || ch == 'e' || ch == 'E' {
					return false
				}
			}
		}
	default:
		return false
	}
	if len(m.Has) == 0 && len(m.Lacks) == 0 && len(m.Equals) == 0 {
		return true
	}
	if c != '{' {
		return false
	}
	// Scan a copy of the Decoder over the object's members, so that the real read
	// is unaffected. Bit i of seen: has[i] is present; bit 32+j: the j-th equals
	// pair holds (the last of duplicate keys counts, as in decoding).
	probe := Decoder{buf: d.buf, pos: d.pos, depth: d.depth}
	var seen uint64
	lacking := true
	err := probe.object(func(key []byte) error {
		for i, k := range m.Has {
			if string(key) == k {
				seen |= 1 << i
			}
		}
		for _, k := range m.Lacks {
			if string(key) == k {
				lacking = false
			}
		}
		for j := 0; j+1 < len(m.Equals); j += 2 {
			if string(key) != m.Equals[j] {
				continue
			}
			bit := uint64(1) << (32 + j/2)
			seen &^= bit
			if probe.peek() != '"' {
				return probe.skip()
			}
			b, err := probe.str()
			if err == nil && string(b) == m.Equals[j+1] {
				seen |= bit
			}
			return err
		}
		return probe.skip()
	})
	if err != nil || !lacking {
		return false
	}
	want := uint64(1)<<len(m.Has) - 1
	for j := 0; j < len(m.Equals)/2; j++ {
		want |= 1 << (32 + j)
	}
	return seen&want == want
}

// NoVariant is the error when no variant of a union matches: a syntax error if
// the value is not valid JSON, else a type error.
func (d *Decoder) NoVariant(union string) error {
	probe := Decoder{buf: d.buf, pos: d.pos, depth: d.depth}
	if err := probe.skip(); err != nil {
		return err
	}
	return d.typef("no variant of %s matches this %s", union, d.kind())
}

// OneVariant checks that a union value built in Go has exactly one variant set.
func (e *Encoder) OneVariant(union string, n int) bool {
	if n == 1 {
		return true
	}
	e.fail(encodeErrorf("%s has %d variants set, want exactly 1", union, n))
	e.buf = append(e.buf, "null"...)
	return false
}
