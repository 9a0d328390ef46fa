package payloads

// The generated files of this package (aliases.go, names.go, register.go) and
// of its generated internal packages (internal/common, internal/group1…: the
// types, their codec and getters, the events' parsers) come from the schema in
// ../schema. `make generate` runs this line, after the importer that writes the
// schema. The types live in several packages, so that no one compile holds
// them all (bench/README.md, "Compile cost"); aliases make them payloads' own.

//go:generate go run ../cmd/genpayloads -schema ../schema -out .
