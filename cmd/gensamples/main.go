// Command gensamples writes a sample payload, synthesized from the schema by
// internal/samplegen, for every event and event.action of the schema that has no
// example in the corpus (internal/corpus/testdata: the forge's public examples and
// the hand-written synthetic ones), so that every name has at least one. They go
// to the corpus's generated/ directory, one file per name (EVENT/ACTION-0.json, or
// EVENT/EVENT-0.json), with a README that lists them; files of names that have an
// example by now are removed. The seed is fixed: the output depends only on the
// schema and the corpus (make generate runs it; make generate-check checks it).
//
//	go run ./cmd/gensamples -schema schema -corpus internal/corpus/testdata
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/samplegen"
)

// seed is the samples' seed; changing it changes every generated file.
const seed = 44

func main() {
	schemaDir := flag.String("schema", "schema", "the schema directory")
	corpusDir := flag.String("corpus", "internal/corpus/testdata", "the corpus's testdata directory")
	flag.Parse()
	if err := run(*schemaDir, *corpusDir); err != nil {
		fmt.Fprintln(os.Stderr, "gensamples:", err)
		os.Exit(1)
	}
}

func run(schemaDir, corpusDir string) error {
	s, err := genmodel.Load(schemaDir)
	if err != nil {
		return err
	}
	have, err := namesWithExamples(corpusDir)
	if err != nil {
		return err
	}
	out := filepath.Join(corpusDir, "generated")
	want := map[string][]byte{} // path under out → body
	var rows []string
	for _, name := range samplegen.Names(s) {
		if have[name] {
			continue
		}
		body, err := samplegen.Payload(s, name, seed)
		if err != nil {
			return err
		}
		event, action, _ := strings.Cut(name, ".")
		file := event + "-0.json"
		if action != "" {
			file = action + "-0.json"
		}
		rel := event + "/" + file
		want[rel] = body
		rows = append(rows, fmt.Sprintf("| `%s` | %s |", rel, name))
	}
	// Stale files go first, then every wanted one is written (unchanged ones too:
	// the bytes are the same).
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		rel, _ := filepath.Rel(out, p)
		if _, ok := want[filepath.ToSlash(rel)]; !ok {
			return os.Remove(p)
		}
		return nil
	})
	removeEmptyDirs(out)
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeIfChanged(p, want[rel]); err != nil {
			return err
		}
	}
	var readme bytes.Buffer
	fmt.Fprintf(&readme, "# Generated payloads\n\n"+
		"Written by `cmd/gensamples` (`make generate`) from `schema/` with internal/samplegen,\n"+
		"seed %d: one valid payload for each event and event.action that has no example under\n"+
		"../examples or ../synthetic, so that every name has at least one. Each holds the\n"+
		"payload's required members only, enum values and union variants picked by the seed,\n"+
		"and the event's own action; corpus.Example.Generated is true for them. Do not edit:\n"+
		"change the schema or the generator and run `make generate`.\n\n"+
		"| file | name |\n|---|---|\n%s\n", seed, strings.Join(rows, "\n"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return writeIfChanged(filepath.Join(out, "README.md"), readme.Bytes())
}

// namesWithExamples returns the names ("event", "event.action") the corpus's
// public and hand-written examples cover.
func namesWithExamples(corpusDir string) (map[string]bool, error) {
	have := map[string]bool{}
	for _, dir := range []string{"examples", "synthetic"} {
		paths, err := filepath.Glob(filepath.Join(corpusDir, dir, "*", "*.json"))
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			event := filepath.Base(filepath.Dir(p))
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			have[event] = true
			if a := actionOf(data); a != "" {
				have[event+"."+a] = true
			}
		}
	}
	return have, nil
}

func writeIfChanged(p string, data []byte) error {
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return os.WriteFile(p, data, 0o644)
}

func removeEmptyDirs(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			p := filepath.Join(root, e.Name())
			if inner, _ := os.ReadDir(p); len(inner) == 0 {
				_ = os.Remove(p)
			}
		}
	}
}
