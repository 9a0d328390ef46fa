package payloads

import codec "forgehooks.dev/forgehooks/payloads/codec"

// Member is one member of a JSON object: Key, unescaped, and Value, the
// member's value as it was received.
type Member = codec.Member

// Object is implemented by a pointer to every generated struct type, and by no
// other type. It exists so that UnknownMembers can take any of them.
type Object = codec.Object

// UnknownMembers returns the members of o's decoded JSON object that the schema
// does not know, in the order they arrived (duplicates included). MarshalJSON
// writes them back after the known members. The slice is a copy; the values are
// shared and must not be modified. A value built in Go has none.
func UnknownMembers(o Object) []Member { return codec.UnknownMembers(o) }
