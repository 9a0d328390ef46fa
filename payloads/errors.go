package payloads

import codec "forgehooks.dev/forgehooks/payloads/codec"

// ErrSyntax is wrapped by every decoding error about input that is not valid
// JSON. Test for it with errors.Is.
var ErrSyntax = codec.ErrSyntax

// ErrType is wrapped by every decoding error about valid JSON whose value does
// not have the type the schema gives it, such as a string where an integer id
// belongs or a top-level value that is not an object. Test for it with errors.Is.
var ErrType = codec.ErrType

// ErrEncode is wrapped by every error of MarshalJSON: a value built in Go that
// cannot be written as JSON (a union with no variant set or several, a NaN, a
// json.RawMessage that is not valid JSON).
var ErrEncode = codec.ErrEncode

// DecodeError is the error of decoding a payload: which type was decoded
// (Type, such as "IssuesOpenedEvent"), where in the document the problem is
// (Path, such as ".issue.labels[2].id", empty for the document itself, and
// Offset, in bytes), and why (Err, which wraps ErrSyntax or ErrType). Its
// Unwrap returns Err.
type DecodeError = codec.DecodeError
