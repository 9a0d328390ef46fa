package payloads

// match says when a JSON value is a union's variant (gen.Match, as generated):
// every condition given must hold; no condition at all always holds.
type match struct {
	// json is the value's JSON kind: object, array, string, number, integer
	// (a number without fraction or exponent) or boolean; "" for any.
	json string
	// has and lacks are keys an object must have and must not have.
	has, lacks []string
	// equals holds key, value pairs: the object's member key must be a string
	// equal to value.
	equals []string
}

// matches reports whether the next value satisfies m, without consuming it.
func (d *decoder) matches(m *match) bool {
	c := d.peek()
	switch m.json {
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
		if m.json == "integer" {
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
	if len(m.has) == 0 && len(m.lacks) == 0 && len(m.equals) == 0 {
		return true
	}
	if c != '{' {
		return false
	}
	// Scan a copy of the decoder over the object's members, so that the real read
	// is unaffected. Bit i of seen: has[i] is present; bit 32+j: the j-th equals
	// pair holds (the last of duplicate keys counts, as in decoding).
	probe := decoder{buf: d.buf, pos: d.pos, depth: d.depth}
	var seen uint64
	lacking := true
	err := probe.object(func(key []byte) error {
		for i, k := range m.has {
			if string(key) == k {
				seen |= 1 << i
			}
		}
		for _, k := range m.lacks {
			if string(key) == k {
				lacking = false
			}
		}
		for j := 0; j+1 < len(m.equals); j += 2 {
			if string(key) != m.equals[j] {
				continue
			}
			bit := uint64(1) << (32 + j/2)
			seen &^= bit
			if probe.peek() != '"' {
				return probe.skip()
			}
			b, err := probe.str()
			if err == nil && string(b) == m.equals[j+1] {
				seen |= bit
			}
			return err
		}
		return probe.skip()
	})
	if err != nil || !lacking {
		return false
	}
	want := uint64(1)<<len(m.has) - 1
	for j := 0; j < len(m.equals)/2; j++ {
		want |= 1 << (32 + j)
	}
	return seen&want == want
}

// noVariant is the error when no variant of a union matches: a syntax error if
// the value is not valid JSON, else a type error.
func (d *decoder) noVariant(union string) error {
	probe := decoder{buf: d.buf, pos: d.pos, depth: d.depth}
	if err := probe.skip(); err != nil {
		return err
	}
	return d.typef("no variant of %s matches this %s", union, d.kind())
}

// oneVariant checks that a union value built in Go has exactly one variant set.
func (e *encoder) oneVariant(union string, n int) bool {
	if n == 1 {
		return true
	}
	e.fail(encodeErrorf("%s has %d variants set, want exactly 1", union, n))
	e.buf = append(e.buf, "null"...)
	return false
}
