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

// Object is implemented by a pointer to every generated struct type. Its
// unexported method comes from the embedded Extra, so that no type outside the
// generated packages is an Object.
type Object interface {
	json.Marshaler
	json.Unmarshaler
	extras() *Extra
}

// UnknownMembers returns the members the schema does not know that o's
// decoded JSON object had, in arrival order; the slice is a copy.
func UnknownMembers(o Object) []Member {
	return append([]Member(nil), o.extras().unknown...)
}

// HasUnknown reports whether p kept an unknown member with the given key.
func HasUnknown(p Payload, key string) bool {
	for _, m := range p.extras().unknown {
		if m.Key == key {
			return true
		}
	}
	return false
}

// Extra is what every generated struct keeps beyond its typed fields. Each
// embeds it under the unexported name extra (an alias), which cannot collide
// with a generated field, those being exported. It has one method, unexported,
// which makes its embedders Objects; everything else is a function of *Extra,
// because an exported method would be promoted into every generated type's API
// (and cost the compiler a wrapper per type).
type Extra struct {
	// unknown holds the members the schema does not know, in arrival order.
	unknown []Member
	// absent has bit i set when the struct's i-th value field (a required,
	// non-nullable member, which is not a pointer) was missing or null in the
	// decoded document, so that encoding leaves it out as it came instead of
	// writing a zero value. Nil (the zero value, and any value built in Go) means
	// every value field is written.
	absent []uint64
}

func (x *Extra) extras() *Extra { return x }

// KeepUnknown reads the value of an unknown member and keeps it in x.
func KeepUnknown(x *Extra, key []byte, d *Decoder) error {
	v, err := d.raw()
	if err != nil {
		return err
	}
	x.unknown = append(x.unknown, Member{Key: string(key), Value: v})
	return nil
}

// DecodeAction reads a payload's top-level "action" member into *p so that, as in
// routing (the emitter, Parse), the last occurrence alone counts: a string is the
// action; anything else (null, a number, an object) means no
// action, leaves *p empty and is kept as an unknown member, so that it encodes
// back as it came. An earlier occurrence kept that way is dropped.
//
// The action is value member i: a string marks it seen, anything else unmarks
// it, so that encoding writes the kept member instead of an empty action.
func DecodeAction(x *Extra, p *string, key []byte, d *Decoder, seen *SeenSet, i int) error {
	x.unknown = slices.DeleteFunc(x.unknown, func(m Member) bool { return m.Key == "action" })
	*p = ""
	if d.peek() == '"' {
		seen.mark(i)
		return DecString(p, d)
	}
	seen.unmark(i)
	return KeepUnknown(x, key, d)
}

// Written reports whether value field i of the struct x belongs to is to be
// written. It stays a call: the generated encoders and getters call it at
// thousands of sites, where inlining would cost more to compile than the calls
// cost to run (neither is on a delivery's path).
//
//go:noinline
func Written(x *Extra, i int) bool {
	return i/64 >= len(x.absent) || x.absent[i/64]&(1<<(i%64)) == 0
}

// EncodeUnknown writes the unknown members. Their values came from the decoder,
// which checked them, and cannot be set from outside: written as they are.
func EncodeUnknown(x *Extra, e *Encoder) {
	for i := range x.unknown {
		m := &x.unknown[i]
		e.keyString(m.Key)
		e.buf = append(e.buf, m.Value...)
	}
}
