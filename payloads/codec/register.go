package payloads

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"forgehooks.dev/forgehooks/emitter"
)

// Registration of typed handlers: what every generated package's On…Event
// functions call, ours (package payloads) and a package generated from a
// schema of one's own alike.

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

// OnActions registers h for the deliveries of event whose action is one of
// actions, with one listener (the Go form of a handler for a set of names,
// such as "pull_request.opened" | "pull_request.synchronize"), or for every
// delivery of event when actions is empty. known tells the event.action names
// the schema knows; an action it does not know, or one listed twice, panics
// here, at registration, as a misspelt pattern does with http.ServeMux.
// Several actions need a Registrar with OnNames (an *emitter.Emitter or a
// *webhooks.Webhooks), for the one listener RemoveListener takes.
func OnActions[P Payload](r Registrar, pkg, fn, event string, known func(string) bool, parse func(Input) (Payload, error), h func(context.Context, Event[P]) error, actions []string) *emitter.Listener {
	if len(actions) == 0 {
		return On(r, pkg, event, event, parse, h)
	}
	// The generic part is what needs P; the rest, shared by every
	// instantiation, is in actionNames and register.
	eventNames := actionNames(fn, event, known, actions)
	if h == nil {
		panic(fmt.Sprintf("payloads: nil handler for %q", eventNames))
	}
	name := strings.Join(eventNames, ", ")
	return register(r, fn, eventNames, name, pkg, event, parse, typedHandler(name, pkg, event, parse, h))
}

// actionNames returns the event.action names of actions, and panics for an
// action that known does not know or that is listed twice.
func actionNames(fn, event string, known func(string) bool, actions []string) []string {
	eventNames := make([]string, len(actions))
	for i, a := range actions {
		name := event + "." + a
		if a == "" || !known(name) {
			panic(fmt.Sprintf("payloads: %s: %q is not an action of %q that the schema knows (see EmitterEventNames)", fn, a, event))
		}
		if slices.Contains(eventNames[:i], name) {
			panic(fmt.Sprintf("payloads: %s: action %q is listed twice", fn, a))
		}
		eventNames[i] = name
	}
	return eventNames
}

// register registers handler, the typed handler of the generated package pkg,
// under eventNames: one name as On does, several with the registrar's OnNames
// (fn names the caller in the panic of a registrar without one).
func register(r Registrar, fn string, eventNames []string, name, pkg, event string, parse func(Input) (Payload, error), handler emitter.Handler) *emitter.Listener {
	if len(eventNames) == 1 {
		if eventNames[0] == event {
			if d, ok := r.(emitter.DecodingRegistrar); ok {
				return d.OnDecoded(event, WholeDecoder(pkg, event, parse), handler)
			}
		}
		return r.On(eventNames[0], handler)
	}
	multi, ok := r.(interface {
		OnNames(names []string, h emitter.Handler) *emitter.Listener
	})
	if !ok {
		panic(fmt.Sprintf("payloads: %s with several actions needs a registrar with OnNames (an *emitter.Emitter or *webhooks.Webhooks), not %T", fn, r))
	}
	return multi.OnNames(eventNames, handler)
}

// memoKey is the key under which a delivery's typed payload is kept, per
// generated package (its import path) and event name: the event-level and every
// action-level handler of one delivery share one decode, and two generated
// packages never see each other's types.
type memoKey struct{ pkg, event string }

// On registers h under name for the generated package pkg (its import path).
// The payload is decoded by parse (the event's parser) at most once per delivery, and only when a typed handler runs; a decode error
// becomes the handler's error. A handler of a whole event (name == event) sees
// every delivery of it, so where the registrar can (an
// emitter.DecodingRegistrar: an *emitter.Emitter, a *webhooks.Webhooks) the decode also stands in
// for the emitter's own validating scan (see WholeDecoder); other registrars
// get the handler through On and decode after the emitter's scan.
func On[P Payload](r Registrar, pkg, name, event string, parse func(Input) (Payload, error), h func(context.Context, Event[P]) error) *emitter.Listener {
	if h == nil {
		panic(fmt.Sprintf("payloads: nil handler for %q", name))
	}
	return register(r, "On", []string{name}, name, pkg, event, parse, typedHandler(name, pkg, event, parse, h))
}

// typedHandler is the emitter.Handler of h, registered under name (for
// errors): it decodes each delivery of event with parse, at most once per
// delivery for all the typed handlers of event.
func typedHandler[P Payload](name, pkg, event string, parse func(Input) (Payload, error), h func(context.Context, Event[P]) error) emitter.Handler {
	key := any(memoKey{pkg, event}) // boxed once, not per delivery
	return func(ctx context.Context, ev emitter.Event) error {
		v, err := ev.Memo(key, func() (any, error) { return parse(input(ev.Payload, ev.PayloadOwned())) })
		if err != nil {
			return err
		}
		p, ok := v.(P)
		if !ok {
			// Only reachable when the emitter dispatches under a name the payload
			// does not have (such as an action handler for another action).
			return fmt.Errorf("payloads: a handler for %q got a %q payload: %w", name, v.(Payload).PayloadName(), ErrType)
		}
		return h(ctx, Event[P]{ID: ev.ID, Name: ev.Name, Payload: p})
	}
}

// WholeDecoder is the emitter.Decoder of event's typed handlers, which On
// registers (exported for package payloads' tests): parse, whose
// success means a valid JSON object (the decoder validates what it reads and
// what it skips, as encoding/json does), and the top-level action as the
// emitter finds it, which the decoded payload tells (decodedAction). The value
// is kept under the key the handlers look it up with.
func WholeDecoder(pkg, event string, parse func(Input) (Payload, error)) emitter.Decoder {
	return emitter.Decoder{Key: memoKey{pkg, event}, Decode: func(body []byte, owned bool) (any, string, bool) {
		p, err := parse(input(body, owned))
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
	if _, unknown := p.(*UnknownEvent); unknown {
		return "", false
	}
	name := p.PayloadName()
	if name != event {
		action, ok = strings.CutPrefix(name, event+".")
		return action, ok && action != ""
	}
	if _, has := p.(interface{ GetAction() string }); has {
		return "", false
	}
	return "", !HasUnknown(p, "action")
}

// input is the Input of a delivery's payload: Owned when the emitter says
// nothing modifies its bytes (emitter.Event.PayloadOwned), Bytes otherwise.
func input(payload []byte, owned bool) Input {
	if owned {
		return Owned(payload)
	}
	return Bytes(payload)
}
