// Package gen is the payload generator: it reads a schema (the YAML of this
// module's schema/ directory, or a user's own in the same format) and writes a
// typed payload package: structs with their JSON codec and nil-safe getters,
// per-event registration helpers, Parse, and a small names package. It is a
// function over the schema's model (package gen/model, whose names gen also
// gives, so that a generator program needs only gen). cmd/genpayloads (what
// go generate runs) makes these calls:
//
//	s, err := gen.Load(schemaDir)          // read and check the YAML
//	files, err := gen.Generate(s, opts)     // build every file in memory
//	err = gen.Write(outDir, files)          // write them, remove stale ones
//
// and, as a step of its own when a schema update adds events or types
// (genpayloads -write-packages):
//
//	rec, err := gen.PackagesOf(s)           // the split, extended
//	err = gen.WritePackages(schemaDir, rec) // keep it for the next run
//
// The generated types live in internal packages (see PackagesFile for how they
// are split and why the split is stable) that the package a user imports names
// by aliases; every alias's doc lists its type's fields and methods.
//
// Every generated package but names references the version constant of the
// runtime it was generated for (const _ int = codec.IsVersion2, of package
// forgehooks.dev/forgehooks/payloads/codec): built with a forgehooks whose
// runtime moved on, it fails to compile with the compiler quoting
// "regenerate this package"; regenerate it with that version's gen.
//
// Field.Type and Variant.Type are type expressions: see package gen/model.
package gen

import "forgehooks.dev/forgehooks/gen/model"

// The model's types (package gen/model), by their names in gen.
type (
	// Schema is model.Schema.
	Schema = model.Schema
	// Source is model.Source.
	Source = model.Source
	// Event is model.Event.
	Event = model.Event
	// Action is model.Action.
	Action = model.Action
	// Kind is model.Kind.
	Kind = model.Kind
	// Type is model.Type.
	Type = model.Type
	// Field is model.Field.
	Field = model.Field
	// EnumValue is model.EnumValue.
	EnumValue = model.EnumValue
	// Variant is model.Variant.
	Variant = model.Variant
	// Match is model.Match.
	Match = model.Match
	// Packages is model.Packages.
	Packages = model.Packages
	// SchemaError is model.SchemaError.
	SchemaError = model.SchemaError
	// TypeExpr is model.TypeExpr.
	TypeExpr = model.TypeExpr
	// ExprKind is model.ExprKind.
	ExprKind = model.ExprKind
)

// The kinds of named types and of type expressions, as in package gen/model.
const (
	KindStruct  = model.KindStruct
	KindEnum    = model.KindEnum
	KindUnion   = model.KindUnion
	ExprBuiltin = model.ExprBuiltin
	ExprNamed   = model.ExprNamed
	ExprArray   = model.ExprArray
	ExprMap     = model.ExprMap
)

// The files of a schema directory, as in package gen/model.
const (
	EventsFile   = model.EventsFile
	TypesFile    = model.TypesFile
	ContractFile = model.ContractFile
	PackagesFile = model.PackagesFile
)

// ErrInvalidSchema is model.ErrInvalidSchema.
var ErrInvalidSchema = model.ErrInvalidSchema

// Builtins is model.Builtins.
var Builtins = model.Builtins

// Load is model.Load: it reads the schema in dir and checks it.
func Load(dir string) (*Schema, error) { return model.Load(dir) }

// Check is model.Check: it validates a schema already in memory.
func Check(s *Schema) error { return model.Check(s) }

// ParseTypeExpr is model.ParseTypeExpr.
func ParseTypeExpr(expr string) (*TypeExpr, error) { return model.ParseTypeExpr(expr) }

// GoName is model.GoName.
func GoName(s string) (string, error) { return model.GoName(s) }

// GoWord is model.GoWord.
func GoWord(w string) string { return model.GoWord(w) }
