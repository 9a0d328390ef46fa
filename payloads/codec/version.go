package payloads

// IsVersion2 is the version of generated code this runtime serves. Every
// package gen writes (but its names package, which must not import the
// runtime) holds
//
//	const _ int = codec.IsVersion2
//
// so that a generated package and a runtime that do not go together fail to
// build, at that line, rather than misbehave. When the runtime changes in a
// way generated code must follow, the version goes up together with gen's:
// the next one is declared as an int, and the one before stays declared as
// a string that starts "regenerate this package", which is what the
// compiler quotes for a package generated for it. A package generated for a
// newer runtime than this one fails with "undefined: codec.IsVersion3":
// update forgehooks, or regenerate with the gen of the version built with.
// Version 2: parsers take an Input, not bytes.
const IsVersion2 = 2

// IsVersion1 is the version before IsVersion2: what the compiler quotes to a
// package generated for it.
const IsVersion1 = "regenerate this package: it was generated for an older runtime"
