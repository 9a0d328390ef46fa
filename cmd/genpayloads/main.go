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
// gen.Write, which also removes generated files the schema no longer needs.
// The record of the generated packages (gen.PackagesFile) in the schema
// directory is read, never written: when the schema has events or types it
// does not record (or a recorded type had to move), genpayloads fails and
// says so, since a split that is not recorded may change at the next run.
//
// With -write-packages it writes that record instead, extended for what is
// new (gen.PackagesOf, gen.WritePackages), and says on stderr when a recorded
// type had to move; it generates nothing. `make packages` runs it (and `make
// schema`, after an update).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"forgehooks.dev/forgehooks/gen"
)

func main() {
	schema := flag.String("schema", "../schema", "the schema directory")
	out := flag.String("out", ".", "the directory of the generated package")
	pkgPath := flag.String("package-path", gen.DefaultOptions.PackagePath, "the generated package's import path")
	pkgName := flag.String("package-name", gen.DefaultOptions.PackageName, "the generated package's name")
	writePackages := flag.Bool("write-packages", false, "write the record of the generated packages ("+gen.PackagesFile+" in -schema), extended for what is new, and generate nothing")
	flag.Parse()
	// A package other than this module's payloads is a user's own: it gets
	// the declarations payloads has by hand (gen.Options.Standalone).
	opts := gen.Options{PackagePath: *pkgPath, PackageName: *pkgName, Standalone: *pkgPath != gen.DefaultOptions.PackagePath}
	run := run
	if *writePackages {
		run = record
	}
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
	rec, err := gen.PackagesOf(s)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(rec, s.Packages) {
		return fmt.Errorf("%s does not record the package of everything the schema has (%d events and %d types new, %d moved): run genpayloads -write-packages (make packages) and commit it",
			filepath.Join(schemaDir, gen.PackagesFile), newKeys(s.Packages.Events, rec.Events), newKeys(s.Packages.Types, rec.Types), len(gen.Moved(s.Packages, rec)))
	}
	files, err := gen.Generate(s, opts)
	if err != nil {
		return err
	}
	return gen.Write(out, files)
}

// record is -write-packages.
func record(schemaDir, _ string, _ gen.Options) error {
	s, err := gen.Load(schemaDir)
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
	return gen.WritePackages(schemaDir, rec)
}

// newKeys counts the keys of now that old lacks.
func newKeys(old, now map[string]string) int {
	n := 0
	for k := range now {
		if _, ok := old[k]; !ok {
			n++
		}
	}
	return n
}
