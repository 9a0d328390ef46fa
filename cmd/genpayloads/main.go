// Command genpayloads generates package payloads from the schema: typed payload
// structs, their JSON codec and getters in the internal packages under -out
// (internal/common, internal/events_a, …), and in -out itself their aliases, the
// registration helpers, Parse and the names tuple. It is what
// `go generate ./payloads/...` (and so `make generate`) runs.
//
// Usage:
//
//	genpayloads [-schema dir] [-out dir] [-package-path path -package-name name]
//
// With a package path other than this module's payloads, it generates a
// package of one's own from a schema of one's own (see examples/customschema):
// the same code, plus runtime.go (gen.Options.Standalone).
//
// It reads the schema with gen.Load, generates with gen.Generate and writes with
// gen.Write, which also removes generated files the schema no longer needs. It
// then writes the record of the generated packages (gen.PackagesFile) back to
// the schema directory, extended for what is new, and says on stderr when a
// recorded type had to move.
package main

import (
	"flag"
	"fmt"
	"os"

	"forgehooks.dev/forgehooks/gen"
)

func main() {
	schema := flag.String("schema", "../schema", "the schema directory")
	out := flag.String("out", ".", "the directory of the generated package")
	pkgPath := flag.String("package-path", gen.DefaultOptions.PackagePath, "the generated package's import path")
	pkgName := flag.String("package-name", gen.DefaultOptions.PackageName, "the generated package's name")
	flag.Parse()
	// A package other than this module's payloads is a user's own: it gets
	// the declarations payloads has by hand (gen.Options.Standalone).
	opts := gen.Options{PackagePath: *pkgPath, PackageName: *pkgName, Standalone: *pkgPath != gen.DefaultOptions.PackagePath}
	if err := run(*schema, *out, opts); err != nil {
		fmt.Fprintln(os.Stderr, "genpayloads:", err)
		os.Exit(1)
	}
}

func run(schemaDir, out string, opts gen.Options) error {
	s, err := gen.Load(schemaDir)
	if err != nil {
		return err
	}
	files, err := gen.Generate(s, opts)
	if err != nil {
		return err
	}
	rec, err := gen.PackagesOf(s)
	if err != nil {
		return err
	}
	for _, m := range gen.Moved(s.Packages, rec) {
		fmt.Fprintln(os.Stderr, "genpayloads: moved to keep the imports acyclic:", m)
	}
	if err := gen.Write(out, files); err != nil {
		return err
	}
	return gen.WritePackages(schemaDir, rec)
}
