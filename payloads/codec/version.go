package payloads

// IsVersion1 is the version of generated code this runtime serves. Every
// package gen writes (but its names package, which must not import the
// runtime) holds
//
//	const _ int = codec.IsVersion1
//
// so that a generated package and a runtime that do not go together fail to
// build, at that line, rather than misbehave. When the runtime changes in a
// way generated code must follow, the version goes up together with gen's:
// IsVersion2 is declared as an int, and IsVersion1 stays declared as a
// string that starts "regenerate this package", which is what the compiler
// quotes for a package generated for version 1. A package generated for a
// newer runtime than this one fails with "undefined: codec.IsVersion2":
// update forgehooks, or regenerate with the gen of the version built with.
const IsVersion1 = 1
