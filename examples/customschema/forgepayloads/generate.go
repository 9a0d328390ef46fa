package forgepayloads

// The other files of this package and of its internal and names packages are
// generated from ../schema by forgehooks' generator (package
// forgehooks.dev/forgehooks/gen, driven by its command genpayloads, a tool of
// this module: see go.mod). Run `go generate ./forgepayloads` after editing the schema.

//go:generate go tool genpayloads -schema ../schema -out . -package-path forgehooks.dev/forgehooks/examples/customschema/forgepayloads -package-name forgepayloads
