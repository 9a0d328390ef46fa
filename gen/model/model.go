// Package model is the payload generator's model of a schema: the types of
// the YAML of this module's schema/ directory (or a user's own in the same
// format), reading it (Load from a directory, Parse from bytes) and checking
// it (Check), the type expressions of its fields, and the Go naming rules.
// The generator (package gen) is a function over it; the importer
// (cmd/importschema) builds and checks one in memory without the generator.
//
// Field.Type and Variant.Type are type expressions:
//
//	string | bool | int64 | float64   JSON scalars (ids and counts are int64)
//	timestamp                         a date-time (RFC 3339, other forms, or Unix seconds)
//	raw                               any JSON value, kept as its bytes (free-form data)
//	Name                              a named Type of the schema
//	[]T                               an array
//	map[string]T                      an object with arbitrary keys
//	*T                                an array element or map value that may be null
//
// A field's own optionality and nullability are given by Field.Required and
// Field.Nullable, never by "*".
package model

// Schema is the whole model: every event the forge sends, its actions, and the named
// payload types they use. It is read from the YAML files of schema/.
type Schema struct {
	// Source says where the facts came from (package, version, checksum).
	Source Source `yaml:"source"`
	// Events lists every event, sorted by name.
	Events []Event `yaml:"events"`
	// Types holds the named payload types, sorted by name.
	Types []Type `yaml:"types"`
	// Packages is the record of the generated packages (PackagesFile) that Load
	// found beside the schema; empty when there is none (and from Parse).
	Packages Packages `yaml:"-"`
}

// Source records the published spec a schema was imported from.
type Source struct {
	Package string `yaml:"package"`
	Version string `yaml:"version"`
	File    string `yaml:"file"`
	SHA256  string `yaml:"sha256"`
	// Variants names the spec files of the forge's server variants the schema was
	// compared with, as the published package names them ("ghec", "ghes-3.19");
	// NotSentBy lists only names from here. Empty: no variant was compared.
	Variants []string `yaml:"variants,omitempty"`
}

// Event is one webhook event (the value of the forge's event header).
type Event struct {
	// Name is the event name, such as "issues" or "push".
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Type names the payload type of an event without actions. Empty when the event
	// has actions.
	Type string `yaml:"type,omitempty"`
	// Actions lists the event's actions, sorted by name. Empty when the event has none.
	Actions []Action `yaml:"actions,omitempty"`
	// OtherActionsType names the payload type of actions that Actions does not list.
	// It is set only for an event whose action is free-form (repository_dispatch: the
	// action is the event_type the dispatch request chose, so any value may arrive,
	// all with this shape). Empty for every other event, where an unlisted action is
	// unknown.
	OtherActionsType string `yaml:"other_actions_type,omitempty"`
	// NotSentBy lists the server variants (Source.Variants) that never send this
	// event. Empty: every variant sends it.
	NotSentBy []string `yaml:"not_sent_by,omitempty"`
}

// Action is one value of an event's top-level "action" member.
type Action struct {
	// Name is the action, such as "opened".
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Type names the payload type of this event.action.
	Type string `yaml:"type"`
	// NotSentBy lists the server variants that never send this action.
	NotSentBy []string `yaml:"not_sent_by,omitempty"`
}

// Kind says what a named type is.
type Kind string

// The kinds of named types.
const (
	KindStruct Kind = "struct" // a JSON object with known members
	KindEnum   Kind = "enum"   // a string (or integer) with known values; others still decode
	KindUnion  Kind = "union"  // one of several types, told apart by Variant.Match
)

// Type is a named payload type.
type Type struct {
	// Name is the Go name, such as "Repository".
	Name        string `yaml:"name"`
	Kind        Kind   `yaml:"kind"`
	Description string `yaml:"description,omitempty"`

	// Fields are the members of a struct, in the order the spec lists them.
	Fields []Field `yaml:"fields,omitempty"`

	// Base is the JSON type of an enum: "string" (the default) or "int64".
	Base string `yaml:"base,omitempty"`
	// Values are an enum's known values.
	Values []EnumValue `yaml:"values,omitempty"`

	// Variants are a union's alternatives, tried in order; the first whose Match
	// holds is chosen.
	Variants []Variant `yaml:"variants,omitempty"`
}

// Field is one member of a struct.
type Field struct {
	// JSON is the member's key as the forge sends it.
	JSON string `yaml:"json"`
	// Name is the Go field name; empty means derived from JSON by the generator's
	// naming rules (Go initialisms: ID, URL, HTMLURL, SHA, ...).
	Name        string `yaml:"name,omitempty"`
	Description string `yaml:"description,omitempty"`
	// Type is a type expression (see the package doc).
	Type string `yaml:"type"`
	// Required reports that the member is always present.
	Required bool `yaml:"required,omitempty"`
	// Nullable reports that the member may be null.
	Nullable bool `yaml:"nullable,omitempty"`
	// Pointer keeps the Go field a pointer although the member is now required and
	// not nullable: an earlier schema generated it as a pointer, and compiled user
	// code must keep compiling (schema/lock.yaml records it).
	Pointer bool `yaml:"pointer,omitempty"`
	// NotSentBy lists the server variants whose payloads never carry this member.
	NotSentBy []string `yaml:"not_sent_by,omitempty"`
}

// EnumValue is one known value of an enum.
type EnumValue struct {
	Value       string `yaml:"value"`
	Name        string `yaml:"name,omitempty"` // Go constant suffix; empty means derived
	Description string `yaml:"description,omitempty"`
}

// Variant is one alternative of a union.
type Variant struct {
	// Type is a type expression (see the package doc).
	Type string `yaml:"type"`
	// Name is the Go name of the variant's field in the union; empty means derived
	// from Type.
	Name  string `yaml:"name,omitempty"`
	Match Match  `yaml:"match,omitempty"`
}

// Match says when a JSON value is a union's variant. Every condition given must
// hold; a Match with no condition always holds (a last, default variant).
type Match struct {
	// JSON is the JSON kind of the value: "object", "array", "string", "number",
	// "integer", "boolean".
	JSON string `yaml:"json,omitempty"`
	// Has lists object keys that must be present.
	Has []string `yaml:"has,omitempty"`
	// Lacks lists object keys that must be absent.
	Lacks []string `yaml:"lacks,omitempty"`
	// Equals maps object keys to the string value each must have.
	Equals map[string]string `yaml:"equals,omitempty"`
}

// Packages records the generated package of each event (by event name) and
// named type (by Go name) under the generated package's internal directory
// (see package gen, split.go, for how they are chosen and kept).
type Packages struct {
	Events map[string]string `yaml:"events"`
	Types  map[string]string `yaml:"types"`
}
