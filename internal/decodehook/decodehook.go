// Package decodehook lets package payloads register a typed handler of a whole
// event together with its decoder, on an *emitter.Emitter or on anything that
// dispatches through one (the webhooks facade), without that hook being part
// of either package's public API.
//
// The decoder validates a delivery while decoding it, in place of the
// emitter's own validating scan: a typed handler of a whole event decodes
// every delivery of it anyway, and one pass costs less than a scan and a
// decode. Only this module's packages can import it.
package decodehook

// Decoder decodes the payloads of one event name in the pass over the bytes
// that also validates them.
type Decoder struct {
	// Key is the key under which the decoded value is kept for the delivery,
	// where emitter.Event.Memo finds it.
	Key any
	// Decode decodes payload. ok true promises that payload is a JSON object,
	// valid by encoding/json's rules and nested at most 10,000 deep, and that
	// action is its top-level "action" as emitter.Event.Action reports it (""
	// for none). ok false (an invalid payload, one the decoder refuses, or one
	// it cannot vouch for in one pass) leaves the delivery to the emitter's
	// usual way: a validating scan, and a decode when a handler asks for it.
	Decode func(payload []byte) (v any, action string, ok bool)
}

// register is set by package emitter (in its init, which runs before any
// package that can register a handler): it registers h, an emitter.Handler,
// under name with dec on em when em is an *emitter.Emitter, and returns the
// *emitter.Listener. This package cannot name those types without importing
// emitter, which imports it.
var register func(em any, name string, dec Decoder, h any) (listener any, ok bool)

// SetRegister installs package emitter's registration. Only emitter calls it.
func SetRegister(f func(em any, name string, dec Decoder, h any) (listener any, ok bool)) {
	register = f
}

// Via is embedded (under an unexported alias, so that it adds no exported
// field) by a type that dispatches through an emitter it holds, so that
// Register finds that emitter. Its zero value points at none.
type Via struct{ em any }

// ViaEmitter returns a Via pointing at em, an *emitter.Emitter.
func ViaEmitter(em any) Via { return Via{em: em} }

// decodeVia is promoted to the embedding type; being unexported, it is not
// part of that type's API, yet it satisfies via below.
func (v Via) decodeVia() any { return v.em }

type via interface{ decodeVia() any }

// Register registers h (an emitter.Handler) under name with dec on r, when r
// is an *emitter.Emitter or embeds a Via, and returns the *emitter.Listener
// and true. Otherwise it registers nothing and reports false: the caller
// registers h the ordinary way.
func Register(r any, name string, dec Decoder, h any) (listener any, ok bool) {
	if v, isVia := r.(via); isVia {
		r = v.decodeVia()
	}
	if register == nil || r == nil {
		return nil, false
	}
	return register(r, name, dec, h)
}
