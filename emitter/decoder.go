package emitter

// Decoder decodes the payloads of one event name in the pass over the bytes
// that also validates them. Registered with a handler of that whole event
// through OnDecoded, it stands in for Receive's own validating scan: a typed
// handler of a whole event decodes every delivery of it anyway, and one pass
// costs less than a scan and a decode. Generated payload packages register
// their typed handlers this way; a raw handler has no use for it.
type Decoder struct {
	// Key is the key under which the decoded value is kept for the delivery,
	// where Event.Memo finds it.
	Key any
	// Decode decodes payload. ok true promises that payload is a JSON object,
	// valid by encoding/json's rules and nested at most 10,000 deep, and that
	// action is its top-level "action" as Event.Action reports it ("" for
	// none). ok false (an invalid payload, one the decoder refuses, or one it
	// cannot vouch for in one pass) leaves the delivery to the usual way: a
	// validating scan, and a decode when a handler asks for it. A panic in
	// Decode counts as ok false. owned is Event.PayloadOwned of the delivery:
	// true, v may share payload's bytes; false, it must not (the caller of
	// Receive may reuse them).
	Decode func(payload []byte, owned bool) (v any, action string, ok bool)
}

// DecodingRegistrar is what registers a handler together with its Decoder:
// *Emitter, and anything that dispatches through one (a *webhooks.Webhooks).
// A generated payload package registers a typed handler of a whole event with
// OnDecoded when its registrar has it, and with On otherwise (then the payload
// is scanned, and decoded on demand).
type DecodingRegistrar interface {
	OnDecoded(name string, dec Decoder, h Handler) *Listener
}
