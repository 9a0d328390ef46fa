// Package payloads, imported as codec, is the runtime of the generated payload
// code in payloads/internal: the JSON Decoder and Encoder the generated decode
// and encode functions drive, the decoders and encoders of scalars,
// collections and pointers they compose, Extra (what every generated struct
// keeps beyond its fields), Timestamp, the decoding errors and the parsers'
// shared steps. It is named payloads, as the packages it serves are, so that
// its types print as package payloads names them (payloads.Timestamp).
//
// Nothing here is API: package payloads re-exports what users need (Payload,
// Timestamp, DecodeError, UnknownEvent, Member, …) by alias.
package payloads
