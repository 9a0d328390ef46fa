package payloads

import (
	"encoding/json"
	"slices"
)

// Member is one member of a JSON object.
type Member struct {
	// Key is the member's key, unescaped.
	Key string
	// Value is the member's value as it was received.
	Value json.RawMessage
}

// Object is implemented by a pointer to every generated struct type. It exists so
// that UnknownMembers can take any of them.
type Object interface {
	json.Marshaler
	json.Unmarshaler
	extras() *extra
}

// UnknownMembers returns the members of o's decoded JSON object that the schema
// does not know, in the order they arrived (duplicates included). MarshalJSON
// writes them back after the known members. The slice is a copy; the values are
// shared and must not be modified. A value built in Go has none.
func UnknownMembers(o Object) []Member {
	return append([]Member(nil), o.extras().unknown...)
}

// extra is what every generated struct keeps beyond its typed fields, in a field
// named extra, which cannot collide with a generated field: those are always
// exported. Each struct's extras method returns it.
type extra struct {
	// unknown holds the members the schema does not know, in arrival order.
	unknown []Member
	// absent has bit i set when the struct's i-th value field (a required,
	// non-nullable member, which is not a pointer) was missing or null in the
	// decoded document, so that encoding leaves it out as it came instead of
	// writing a zero value. Nil (the zero value, and any value built in Go) means
	// every value field is written.
	absent []uint64
}

// keepUnknown reads the value of an unknown member and keeps it.
func (x *extra) keepUnknown(key []byte, d *decoder) error {
	v, err := d.raw()
	if err != nil {
		return err
	}
	x.unknown = append(x.unknown, Member{Key: string(key), Value: v})
	return nil
}

// decodeAction reads a payload's top-level "action" member into *p so that, as in
// routing (the emitter, Parse), the last occurrence alone counts: a string is the
// action; anything else (null, a number, an object) means no
// action, leaves *p empty and is kept as an unknown member, so that it encodes
// back as it came. An earlier occurrence kept that way is dropped.
//
// The action is value member i: a string marks it seen, anything else unmarks
// it, so that encoding writes the kept member instead of an empty action.
func (x *extra) decodeAction(p *string, key []byte, d *decoder, seen *seenSet, i int) error {
	x.unknown = slices.DeleteFunc(x.unknown, func(m Member) bool { return m.Key == "action" })
	*p = ""
	if d.peek() == '"' {
		seen.mark(i)
		return decString(p, d)
	}
	seen.unmark(i)
	return x.keepUnknown(key, d)
}

// written reports whether value field i is to be written. It stays a call: the
// generated encoders and getters call it at thousands of sites, where inlining
// would cost more to compile than the calls cost to run (neither is on a
// delivery's path).
//
//go:noinline
func (x *extra) written(i int) bool {
	return i/64 >= len(x.absent) || x.absent[i/64]&(1<<(i%64)) == 0
}

// encodeUnknown writes the unknown members. Their values came from the decoder,
// which checked them, and cannot be set from outside: written as they are.
func (x *extra) encodeUnknown(e *encoder) {
	for i := range x.unknown {
		m := &x.unknown[i]
		e.keyString(m.Key)
		e.buf = append(e.buf, m.Value...)
	}
}
