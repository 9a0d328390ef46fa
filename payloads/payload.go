package payloads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/decodehook"
)

// Payload is the typed payload of one delivery: a generated event struct (such as
// *PushEvent or *IssuesOpenedEvent), an event's unknown-action type (such as
// *IssuesUnknownEvent), or *UnknownEvent for an event the schema does not know.
// Parse returns one; a type switch tells them apart.
type Payload interface {
	json.Marshaler
	// payloadName returns "event" or "event.action"; unexported so that only this
	// package's types are payloads.
	payloadName() string
}

// PayloadName returns the name p was delivered under: "event.action" for a payload
// with an action, "event" otherwise. For the unknown types it is the name and
// action that arrived.
func PayloadName(p Payload) string { return p.payloadName() }

// Event is a delivery whose payload has been decoded into P, as typed handlers
// get it.
type Event[P any] struct {
	// ID is the delivery's unique id; may be empty.
	ID string
	// Name is the event name, such as "issues" (also for handlers of an action).
	Name string
	// Payload is the decoded payload.
	Payload P
}

// Registrar is anything typed handlers can be registered with: an
// *emitter.Emitter, a *webhooks.Webhooks, or a wrapper of either.
type Registrar interface {
	On(name string, h emitter.Handler) *emitter.Listener
}

// memoKey is the key under which a delivery's typed payload is kept, per event
// name: the event-level and every action-level handler of one delivery share one
// decode.
type memoKey struct{ event string }

// on registers h under name. The payload is decoded by parse (the event's parser)
// at most once per delivery, and only when a typed handler runs; a decode error
// becomes the handler's error. A handler of a whole event (name == event) sees
// every delivery of it, so where the registrar can (an *emitter.Emitter, and a
// *webhooks.Webhooks, which dispatches through one) the decode also stands in
// for the emitter's own validating scan (see wholeDecoder); other registrars
// get the handler through On and decode after the emitter's scan.
func on[P Payload](r Registrar, name, event string, parse func([]byte) (Payload, error), h func(context.Context, Event[P]) error) *emitter.Listener {
	if h == nil {
		panic(fmt.Sprintf("payloads: nil handler for %q", name))
	}
	handler := func(ctx context.Context, ev emitter.Event) error {
		v, err := ev.Memo(memoKey{event}, func() (any, error) { return parse(ev.Payload) })
		if err != nil {
			return err
		}
		p, ok := v.(P)
		if !ok {
			// Only reachable when the emitter dispatches under a name the payload
			// does not have (such as an action handler for another action).
			return fmt.Errorf("payloads: a handler for %q got a %q payload: %w", name, v.(Payload).payloadName(), ErrType)
		}
		return h(ctx, Event[P]{ID: ev.ID, Name: ev.Name, Payload: p})
	}
	if name == event {
		if l, ok := decodehook.Register(r, name, wholeDecoder(event, parse), emitter.Handler(handler)); ok {
			return l.(*emitter.Listener)
		}
	}
	return r.On(name, handler)
}

// wholeDecoder is the decodehook.Decoder of event's typed handlers: parse, whose
// success means a valid JSON object (the decoder validates what it reads and
// what it skips, as encoding/json does), and the top-level action as the
// emitter finds it, which the decoded payload tells (decodedAction). The value
// is kept under the key the handlers look it up with.
func wholeDecoder(event string, parse func([]byte) (Payload, error)) decodehook.Decoder {
	return decodehook.Decoder{Key: memoKey{event}, Decode: func(body []byte) (any, string, bool) {
		p, err := parse(body)
		if err != nil {
			return nil, "", false
		}
		action, ok := decodedAction(event, p)
		if !ok {
			return nil, "", false
		}
		return p, action, true
	}}
}

// decodedAction returns the top-level "action" of the payload p was decoded
// from, when p tells it for certain: the action in p's name, which the parser
// chose by the payload's action (the last of duplicates, unescaped, as
// encoding/json and the emitter take it). A name without an action tells it
// only for a struct with no action member of its own and no unknown member
// "action": otherwise ok is false and the emitter finds it itself.
func decodedAction(event string, p Payload) (action string, ok bool) {
	name := p.payloadName()
	if name != event {
		action, ok = strings.CutPrefix(name, event+".")
		return action, ok && action != ""
	}
	if _, has := p.(interface{ GetAction() string }); has {
		return "", false
	}
	x, has := p.(interface{ extras() *extra })
	if !has {
		return "", false
	}
	for _, m := range x.extras().unknown {
		if m.Key == "action" {
			return "", false
		}
	}
	return "", true
}

// parseUnknownEvent is Parse for an event the schema does not know.
func parseUnknownEvent(name string, body []byte) (Payload, error) {
	return parseAs(body, &UnknownEvent{Name: name}, "UnknownEvent")
}

// payloadDecoder is a pointer to a payload struct, which decodes itself.
type payloadDecoder interface {
	Payload
	decodable
}

// parseAs decodes body into p, a new value of the struct typ names. It takes an
// interface rather than a type parameter: an instance per payload struct would
// be hundreds of functions for the compiler to build.
func parseAs(body []byte, p payloadDecoder, typ string) (Payload, error) {
	if err := unmarshal(body, typ, p); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeAs decodes the whole document in d into p, a new value of the struct typ
// names, for the parsers of events with actions.
func decodeAs(d *decoder, p payloadDecoder, typ string) (Payload, error) {
	err := p.decode(d)
	if err == nil {
		err = d.end()
	}
	if err != nil {
		return nil, finish(err, typ)
	}
	return p, nil
}

// parseByAction decodes body with dec, which picks the struct of the payload's
// action, in one pass over the bytes when it can: the forge writes "action" as
// the first member, so that member is taken as the action and the payload
// decoded at once, while the decoder counts the top-level "action" keys. Only
// when there was another one (a duplicate: the last one counts), or when the
// first member is not a plain "action" string, or when decoding fails (so that
// the error is the one the exact path gives), is the action found by a pass of
// its own (actionOf) and the payload decoded again.
func parseByAction(body []byte, dec func(action []byte, d *decoder) (Payload, error)) (Payload, error) {
	if action, ok := leadingAction(body); ok {
		d := decoder{buf: body}
		if p, err := dec(action, &d); err == nil && d.actions == 1 {
			return p, nil
		}
	}
	action, err := actionOf(body)
	if err != nil {
		return nil, err
	}
	d := decoder{buf: body}
	return dec([]byte(action), &d)
}

// leadingAction returns the value of body's first member when that member is
// "action" and its value a string of printable ASCII without escapes: what the
// forge sends. It does not check the rest of body.
func leadingAction(body []byte) ([]byte, bool) {
	d := decoder{buf: body}
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
	d := decoder{buf: body}
	action, err := scanAction(&d)
	if err == nil {
		err = d.end()
	}
	return action, finish(err, "payload")
}

// scanAction reads an object and returns its "action" member when it is a string,
// "" when it is absent or not a string; as with encoding/json (and the emitter),
// the last of duplicate keys counts.
func scanAction(d *decoder) (string, error) {
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

func (p *UnknownEvent) payloadName() string {
	if p.Action == "" {
		return p.Name
	}
	return p.Name + "." + p.Action
}

// MarshalJSON returns Raw, or {} when Raw is empty.
func (p UnknownEvent) MarshalJSON() ([]byte, error) {
	if len(p.Raw) == 0 {
		return []byte("{}"), nil
	}
	return marshal(func(e *encoder) { encRaw(&p.Raw, e) })
}

// UnmarshalJSON keeps b, which must be a JSON object, as Raw and reads its action.
func (p *UnknownEvent) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "UnknownEvent", p)
}

func (p *UnknownEvent) decode(d *decoder) error {
	d.ws()
	start := d.pos
	action, err := scanAction(d)
	if err != nil {
		return err
	}
	p.Action = action
	p.Raw = append(json.RawMessage(nil), d.buf[start:d.pos]...)
	return nil
}
