// Package payloads, imported as codec, is the runtime of generated payload
// code (package gen's output: this module's payloads/internal packages, and a
// package generated from a schema of one's own): the JSON Decoder and Encoder
// the generated decode and encode functions drive, the decoders and encoders
// of scalars, collections and pointers they compose, Extra (what every
// generated struct keeps beyond its fields), Timestamp, the decoding errors,
// the parsers' shared steps, and the registration of typed handlers (On,
// OnActions). It is named payloads, as the packages it serves are, so that its
// types print as package payloads names them (payloads.Timestamp).
//
// It is public only so that a package generated outside this module can call
// it. Its API is for generated code and changes with the generator: a program
// uses what its generated package re-exports (Payload, Event, Timestamp,
// DecodeError, UnknownEvent, Member, …) by alias.
package payloads
