package payloads

// The generated files of this package (codec.go, enums.go, events.go, getters.go, names.go,
// register.go, types.go) come from the schema in ../schema. `make generate` runs
// this line, after the importer that writes the schema.

//go:generate go run ../cmd/genpayloads -schema ../schema -out .
