package payloads

import "encoding/json"

// Payload is the typed payload of one delivery: a generated event struct, an
// event's unknown-action type, or *UnknownEvent. Package payloads documents it
// (as payloads.Payload); the unexported method, which generated structs get from
// the embedded Extra, keeps other types out.
type Payload interface {
	json.Marshaler
	// PayloadName returns the name the payload was delivered under: "event" or
	// "event.action".
	PayloadName() string
	extras() *Extra
}

// Decoded is what a generated parser returns for p, which its decoder filled
// with the result err (see Decoder.Finish): p, or the error alone.
func Decoded(p Payload, err error) (Payload, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ParseByAction decodes in with dec, which picks the struct of the payload's
// action, in one pass over the bytes when it can: the forge writes "action" as
// the first member, so that member is taken as the action and the payload
// decoded at once, while the decoder counts the top-level "action" keys. Only
// when there was another one (a duplicate: the last one counts), or when the
// first member is not a plain "action" string, or when decoding fails (so that
// the error is the one the exact path gives), is the action found by a pass of
// its own (actionOf) and the payload decoded again.
func ParseByAction(in Input, dec func(action []byte, d *Decoder) (Payload, error)) (Payload, error) {
	body := in.buf
	if action, ok := leadingAction(body); ok {
		d := in.Decoder()
		if p, err := dec(action, &d); err == nil && d.actions == 1 {
			return p, nil
		}
	}
	action, err := actionOf(body)
	if err != nil {
		return nil, err
	}
	d := in.Decoder()
	return dec([]byte(action), &d)
}

// leadingAction returns the value of body's first member when that member is
// "action" and its value a string of printable ASCII without escapes: what the
// forge sends. It does not check the rest of body.
func leadingAction(body []byte) ([]byte, bool) {
	d := Decoder{buf: body}
	if d.peek() != '{' {
		return nil, false
	}
	d.pos++
	const key = `"action"`
	if d.peek() != '"' || len(body)-d.pos < len(key) || string(body[d.pos:d.pos+len(key)]) != key {
		return nil, false
	}
	d.pos += len(key)
	if d.peek() != ':' {
		return nil, false
	}
	d.pos++
	if d.peek() != '"' {
		return nil, false
	}
	start := d.pos + 1
	for i := start; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			return body[start:i], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// actionOf returns the payload's top-level "action" (see scanAction). The error is
// for a body that is not a JSON object.
func actionOf(body []byte) (string, error) {
	d := Decoder{buf: body}
	action, err := scanAction(&d)
	if err == nil {
		err = d.end()
	}
	return action, finish(err, "payload")
}

// scanAction reads an object and returns its "action" member when it is a string,
// "" when it is absent or not a string; as with encoding/json (and the emitter),
// the last of duplicate keys counts.
func scanAction(d *Decoder) (string, error) {
	var action string
	err := d.object(func(key []byte) error {
		if string(key) != "action" {
			return d.skip()
		}
		action = ""
		if d.peek() != '"' {
			return d.skip()
		}
		b, err := d.str()
		action = string(b)
		return err
	})
	return action, err
}

// UnknownEvent is the payload of an event the schema does not know: the forge adds
// events before any schema has them, and older servers send retired ones. It
// keeps the whole payload.
type UnknownEvent struct {
	// Name is the event name it arrived with.
	Name string
	// Action is the payload's top-level "action" when it is a string, else "".
	Action string
	// Raw is the payload, a JSON object, as received.
	Raw json.RawMessage
}

// PayloadName returns "name.action", or the name alone when Action is empty.
func (p *UnknownEvent) PayloadName() string {
	if p.Action == "" {
		return p.Name
	}
	return p.Name + "." + p.Action
}

// extras makes UnknownEvent a Payload. It keeps no unknown members: Raw holds
// the whole payload.
func (p *UnknownEvent) extras() *Extra { return new(Extra) }

// MarshalJSON returns Raw, or {} when Raw is empty.
func (p UnknownEvent) MarshalJSON() ([]byte, error) {
	if len(p.Raw) == 0 {
		return []byte("{}"), nil
	}
	return marshal(func(e *Encoder) { EncRaw(&p.Raw, e) })
}

// UnmarshalJSON keeps b, which must be a JSON object, as Raw and reads its action.
func (p *UnknownEvent) UnmarshalJSON(b []byte) error {
	d := NewDecoder(b)
	return p.read(&d)
}

// read reads the whole document in d into p (Raw a copy of it).
func (p *UnknownEvent) read(d *Decoder) error {
	start := d.Start()
	action, err := scanAction(d)
	if err == nil {
		p.Action = action
		p.Raw = d.Since(start)
	}
	return d.Finish(err, "UnknownEvent")
}

// ParseUnknownEvent is Parse for an event the schema does not know.
func ParseUnknownEvent(name string, in Input) (Payload, error) {
	p := &UnknownEvent{Name: name}
	d := in.Decoder()
	return Decoded(p, p.read(&d))
}
