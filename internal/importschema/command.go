// Package importschema is the importer behind cmd/importschema. It turns the
// forge's published webhook spec (the OpenAPI files of the npm package
// @octokit/openapi-webhooks) into the YAML schema of schema/: events.yaml (events
// and their actions) and types.yaml (named payload types), and keeps lock.yaml,
// the record of every name and member shape once emitted.
//
//	go run ./cmd/importschema -q                            # re-import, no network
//	go run ./cmd/importschema -fetch 12.2.0 -changelog CHANGELOG.md
//	go run ./cmd/importschema -compare OLD.json NEW.json    # report only
//
// It reads the compressed copies committed under schema/source (checked against the
// record source.yaml beside them), so importing needs no network and gives the same
// output every time. With -fetch VERSION it first downloads that version (a tag
// such as latest is resolved to the version the package says it is) via npm pack;
// nothing is written until the whole import succeeded, and then every file is
// renamed into place.
//
// Names and shapes are stable across updates: a type found at a site the lock
// records (its payload's event.action, or the member of a named type it sits at)
// keeps the lock's name, and a member once generated as a pointer is written
// with pointer: true when the spec makes it a required value. Every import
// compares the new schema with the old and reports what changed (Report):
// breaking changes first, new events with what they brought, the implied
// semantic-version bump, overrides that stopped applying; as Markdown (also a
// CHANGELOG.md section) and JSON.
//
// The package's other spec files (ghec, ghes-3.14 …) are the forge's server
// variants: each is imported with the same lock, and the schema lists, with
// not_sent_by, the variants that lack an event, an action or a member.
//
// How the spec is read: an event is a webhook's x-github.subcategory; its actions
// are the payload's "action" enum. A payload given as a whole-body oneOf becomes one
// struct whose members not shared by every variant are optional. A free-form action
// (repository_dispatch) takes its name from the operationId and is marked so that
// any action decodes to it. Object schemas of identical shape are merged, then
// joined by family (one type per title, such as Repository or User) and by place
// (what sits at the same member of one type is one type); every type gets a name
// from its title, component name or the member it sits at, never a number where a
// name exists. schema/overrides.yaml patches what the spec gets wrong; every patch
// has a reason, and one that no longer changes anything is reported.
package importschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/atomicfile"
)

// Run is the command importschema: args are its flags (without the program
// name), messages go to stderr; it returns the exit code (0 done, 1 failed, 2 bad
// usage, 3 breaking changes with -fail-on-breaking). It is RunWith without
// Options.
func Run(args []string, stderr io.Writer) int { return RunWith(args, stderr, Options{}) }

// Options gives the command what this package does not have: it knows the
// generator's model (gen/model), not the generator.
type Options struct {
	// Declarations, when set, lists the exported Go declarations the
	// generator makes of a schema (cmd/importschema passes the generator's
	// own, gen.Declarations), so that the change report names each one that
	// goes (Report.GoneDeclarations).
	Declarations func(*genmodel.Schema) ([]string, error)
}

// RunWith is Run with o.
func RunWith(args []string, stderr io.Writer, o Options) int {
	fs := flag.NewFlagSet("importschema", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("spec", "schema/source/"+mainVariant+".json.gz", "the spec: JSON, or gzip'd JSON when the name ends in .gz; the variants' files lie beside it")
	recPath := fs.String("record", "", "the record of the spec's package, version and checksums (default: source.yaml beside -spec; \"none\" to skip the check)")
	ovPath := fs.String("overrides", "schema/overrides.yaml", "the overrides file (\"\" for none)")
	out := fs.String("out", "schema", "the directory to write events.yaml, types.yaml and lock.yaml into")
	lockPath := fs.String("lock", "", "the lock of names and shapes once emitted (default: lock.yaml in -out; \"none\" for an empty one, not written)")
	fetchVersion := fs.String("fetch", "", "first download this version (or tag, such as latest) of "+specPackage+" via npm pack (needs the network)")
	fetchRestVersion := fs.String("fetch-rest", "", "first download this version (or tag, such as latest) of "+restPackage+", the second source, via npm pack (needs the network); \"none\" drops the second source")
	compareMode := fs.Bool("compare", false, "compare two specs, OLD and NEW (JSON or .json.gz arguments): import OLD with an empty lock, then NEW with OLD's, and report; writes no schema")
	changelog := fs.String("changelog", "", "insert the change report, as Markdown, at the top of this file's sections when the schema changed")
	reportMD := fs.String("report", "", "write the change report as Markdown to this file (\"-\": stderr)")
	reportJSON := fs.String("report-json", "", "write the change report as JSON to this file")
	failBreaking := fs.Bool("fail-on-breaking", false, "exit 3 when the update breaks compiled code (after writing)")
	quiet := fs.Bool("q", false, "print warnings only, no summary or report")
	driftSrc := fs.String("drift", "", "print what "+typesPackage+" (this version or tag, or a types.d.ts[.gz] file) knows that the schema in -out lacks: names and payload members; exit 1 when anything")
	checkMode := fs.Bool("check", false, "import in memory and compare with the files in -out (events.yaml, types.yaml, lock.yaml): exit 1 naming each that differs; writes nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *compareMode != (fs.NArg() == 2) || (!*compareMode && fs.NArg() > 0) {
		fmt.Fprintf(stderr, "importschema: unexpected arguments %q (-compare takes OLD and NEW)\n", fs.Args())
		return 2
	}
	if *driftSrc != "" {
		return runDrift(*driftSrc, *out, stderr, stderr)
	}
	start := time.Now()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "importschema: "+format+"\n", a...)
		return 1
	}
	warn := func(format string, a ...any) {
		fmt.Fprintf(stderr, "importschema: warning: "+format+"\n", a...)
	}
	ov := &overrides{}
	readOv := func() error {
		if *ovPath == "" {
			return nil
		}
		var err error
		ov, err = readOverrides(*ovPath)
		return err
	}

	if *compareMode {
		if err := readOv(); err != nil {
			return fail("%v", err)
		}
		return runCompare(fs.Arg(0), fs.Arg(1), ov, *reportMD, *reportJSON, *changelog, *failBreaking, *quiet, stderr, o)
	}

	// 1. The spec and its variants: downloaded (kept in memory until the end) or
	// the committed copies.
	if *recPath == "" {
		*recPath = filepath.Join(filepath.Dir(*spec), recordName)
	}
	var rec *record
	if *recPath != "none" {
		r, err := readRecord(*recPath)
		if err != nil && !(*fetchVersion != "" && errors.Is(err, os.ErrNotExist)) {
			return fail("record: %v", err)
		}
		rec = r
	}
	var data []byte
	variants := map[string][]byte{}
	var pending []pendingFile
	writeRec := false
	if *fetchVersion != "" {
		f, err := fetch(*fetchVersion, rec)
		if err != nil {
			return fail("fetch: %v", err)
		}
		rec, data = f.rec, f.specs[mainVariant]
		for name, d := range f.specs {
			if name != mainVariant {
				variants[name] = d
			}
		}
		dir := filepath.Dir(*spec)
		for _, name := range sortedKeys(f.files) {
			pending = append(pending, pendingFile{filepath.Join(dir, name), f.files[name]})
		}
		// The copies of variants the new version no longer has go.
		if rec0, _ := readRecord(*recPath); rec0 != nil {
			for _, v := range rec0.Variants {
				if f.files[v.Name+".json.gz"] == nil {
					pending = append(pending, pendingFile{path: filepath.Join(dir, v.Name+".json.gz")})
				}
			}
		}
		if rec0, _ := readRecord(*recPath); rec0 != nil {
			rec.Rest = rec0.Rest
		}
		writeRec = true
		fmt.Fprintf(stderr, "importschema: %s@%s: %d spec files (%s and %d variants), tarball sha256 %s\n",
			rec.Package, rec.Version, len(f.files), mainVariant, len(rec.Variants), rec.TarballSHA256)
	} else {
		var err error
		if data, err = readSpec(*spec, rec); err != nil {
			return fail("%v", err)
		}
		if rec != nil {
			for _, v := range rec.Variants {
				p := filepath.Join(filepath.Dir(*spec), v.Name+".json.gz")
				d, err := readSpec(p, &record{SHA256: v.SHA256})
				if err != nil {
					return fail("variant %s: %v", v.Name, err)
				}
				variants[v.Name] = d
			}
		}
	}

	// 1b. The second source: downloaded, or its committed pruned copies; the
	// webhooks it adds must be the ones the record lists.
	var restSpecs map[string][]byte
	srcDir := filepath.Dir(*spec)
	oldRest := ""
	if rec != nil && rec.Rest != nil {
		oldRest = rec.Rest.Version
	}
	switch {
	case *fetchRestVersion == "none":
		// The first source alone (make spec-versions at older versions).
		if rec != nil && rec.Rest != nil {
			for _, v := range rec.Rest.Variants {
				pending = append(pending, pendingFile{path: filepath.Join(srcDir, restDir, v.Name+".json.gz")})
			}
			rec.Rest, writeRec = nil, true
		}
	case *fetchRestVersion != "":
		if rec == nil {
			return fail("-fetch-rest needs the record of the first source (-record)")
		}
		rr, specs, err := fetchRest(*fetchRestVersion, rec.Rest)
		if err != nil {
			return fail("fetch: %v", err)
		}
		for _, name := range sortedKeys(specs) {
			gz, err := gzipBytes(specs[name])
			if err != nil {
				return fail("%v", err)
			}
			pending = append(pending, pendingFile{filepath.Join(srcDir, restDir, name+".json.gz"), gz})
		}
		if rec.Rest != nil {
			for _, v := range rec.Rest.Variants {
				if specs[v.Name] == nil {
					pending = append(pending, pendingFile{path: filepath.Join(srcDir, restDir, v.Name+".json.gz")})
				}
			}
		}
		rec.Rest, restSpecs, writeRec = rr, specs, true
		fmt.Fprintf(stderr, "importschema: %s@%s: %d spec files with webhooks, tarball sha256 %s\n", rr.Package, rr.Version, len(specs), rr.TarballSHA256)
	case rec != nil && rec.Rest != nil:
		var err error
		if restSpecs, err = readRest(srcDir, rec.Rest); err != nil {
			return fail("%v", err)
		}
	}
	if restSpecs != nil {
		var took []restWebhook
		var err error
		if data, variants, took, err = withRest(data, variants, restSpecs); err != nil {
			return fail("%v", err)
		}
		if writeRec {
			rec.Rest.Webhooks = took
		} else if !sameWebhooks(took, rec.Rest.Webhooks) {
			return fail("%s: the record lists %d webhooks from %s, the import takes %d: %v (fetch again to rewrite the record)",
				*recPath, len(rec.Rest.Webhooks), rec.Rest.Package, len(took), took)
		}
	}
	if writeRec {
		recData, err := encodeRecord(rec)
		if err != nil {
			return fail("%v", err)
		}
		pending = append(pending, pendingFile{*recPath, recData})
	}

	if err := readOv(); err != nil {
		return fail("%v", err)
	}

	// 2. What the schema says now, and the lock.
	old, err := readSchema(*out)
	if err != nil {
		return fail("the current schema: %v", err)
	}
	if *lockPath == "" {
		*lockPath = filepath.Join(*out, LockFile)
	}
	lk := newLock(nil)
	if *lockPath != "none" {
		if lk, err = readLock(*lockPath); err != nil {
			return fail("%v", err)
		}
	}

	// 3. The import, the variants, the report.
	res, err := importAll(data, variants, rec, ov, lk, warn)
	if err != nil {
		return fail("%v", err)
	}
	rep := compare(old, res.schema)
	if rec != nil && rec.Rest != nil {
		rep.Rest = rec.Rest.Package + " " + rec.Rest.Version
		if oldRest != "" && oldRest != rec.Rest.Version {
			rep.Rest = rec.Rest.Package + " " + oldRest + " → " + rec.Rest.Version
		}
	}
	rep.Overrides = res.noops
	if rep.GoneDeclarations, err = goneDeclarations(o.Declarations, old, res.schema); err != nil {
		return fail("%v", err)
	}

	// 4. Write everything beside its place, check that it loads, then move it in:
	// an import that fails leaves every file as it was.
	evData, tyData, err := encodeSchema(res.schema, header(rec))
	if err != nil {
		return fail("%v", err)
	}
	pending = append(pending, pendingFile{filepath.Join(*out, genmodel.EventsFile), evData}, pendingFile{filepath.Join(*out, genmodel.TypesFile), tyData})
	if *lockPath != "none" {
		lockData, err := res.lock.encode()
		if err != nil {
			return fail("%v", err)
		}
		pending = append(pending, pendingFile{*lockPath, lockData})
	}
	checked, err := checkLoads(*out, evData, tyData)
	if err != nil {
		return fail("the written schema does not load: %v", err)
	}
	if onChecked != nil {
		onChecked(res.schema, checked)
	}
	if *checkMode {
		return checkFiles(pending, stderr)
	}
	changed := rep.Bump != "none" || (old != nil && old.Source.Version != res.schema.Source.Version) || oldRest != restVersion(rec)
	if *changelog != "" && changed {
		cl, err := insertChangelog(*changelog, rep.Markdown())
		if err != nil {
			return fail("%v", err)
		}
		pending = append(pending, pendingFile{*changelog, cl})
	}
	if err := writeReports(rep, *reportMD, *reportJSON, stderr); err != nil {
		return fail("%v", err)
	}
	if err := commit(pending); err != nil {
		return fail("%v", err)
	}
	if !*quiet {
		if changed {
			fmt.Fprintf(stderr, "importschema: %s", rep.Summary())
		}
		fmt.Fprintf(stderr, "importschema: %s%s in %v\n", res.summary(), variantCounts(res.schema), time.Since(start).Round(time.Millisecond))
	}
	if *failBreaking && len(rep.Breaking) > 0 {
		fmt.Fprintf(stderr, "importschema: %d breaking changes (-fail-on-breaking)\n", len(rep.Breaking))
		return 3
	}
	return 0
}

// runCompare is -compare: two specs, no schema written.
func runCompare(oldPath, newPath string, ov *overrides, reportMD, reportJSON, changelog string, failBreaking, quiet bool, stderr io.Writer, o Options) int {
	quietWarn := func(string, ...any) {}
	var schemas [2]*genmodel.Schema
	lk := newLock(nil)
	var noops []string
	for i, p := range []string{oldPath, newPath} {
		data, err := readSpec(p, nil)
		if err != nil {
			fmt.Fprintf(stderr, "importschema: %v\n", err)
			return 1
		}
		rec := &record{Package: specPackage, Version: specVersionOf(p, data), File: filepath.Base(p), SHA256: sha256Hex(data)}
		res, err := importAll(data, nil, rec, ov, lk, quietWarn)
		if err != nil {
			fmt.Fprintf(stderr, "importschema: %s: %v\n", p, err)
			return 1
		}
		schemas[i], lk, noops = res.schema, res.lock, res.noops
	}
	rep := compare(schemas[0], schemas[1])
	rep.Overrides = noops
	var err error
	if rep.GoneDeclarations, err = goneDeclarations(o.Declarations, schemas[0], schemas[1]); err != nil {
		fmt.Fprintf(stderr, "importschema: %v\n", err)
		return 1
	}
	if reportMD == "" && reportJSON == "" && changelog == "" {
		reportMD = "-"
	}
	if err := writeReports(rep, reportMD, reportJSON, stderr); err != nil {
		fmt.Fprintf(stderr, "importschema: %v\n", err)
		return 1
	}
	if changelog != "" {
		cl, err := insertChangelog(changelog, rep.Markdown())
		if err == nil {
			err = commit([]pendingFile{{changelog, cl}})
		}
		if err != nil {
			fmt.Fprintf(stderr, "importschema: %v\n", err)
			return 1
		}
	}
	if !quiet {
		fmt.Fprintf(stderr, "importschema: %s", rep.Summary())
	}
	if failBreaking && len(rep.Breaking) > 0 {
		return 3
	}
	return 0
}

// specVersionOf is a spec's info.version, or its file name when it has none.
func specVersionOf(path string, data []byte) string {
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if json.Unmarshal(data, &doc) == nil && doc.Info.Version != "" {
		return doc.Info.Version
	}
	return filepath.Base(path)
}

// pendingFile is a file to write once everything else succeeded; nil data
// removes it.
type pendingFile struct {
	path string
	data []byte
}

// commit writes every file to a temporary name beside it, then renames each into
// place: a failure while writing leaves the old files.
func commit(files []pendingFile) error {
	pending := make([]*atomicfile.Pending, len(files))
	defer func() {
		for _, p := range pending {
			if p != nil {
				p.Discard()
			}
		}
	}()
	for i, f := range files {
		if f.data == nil {
			continue
		}
		if old, err := os.ReadFile(f.path); err == nil && bytes.Equal(old, f.data) {
			continue // unchanged: keep its mtime
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		p, err := atomicfile.Prepare(f.path, f.data, 0o644)
		if err != nil {
			return err
		}
		pending[i] = p
	}
	for i, f := range files {
		if f.data == nil {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if pending[i] == nil {
			continue
		}
		if err := pending[i].Commit(); err != nil {
			return err
		}
	}
	return nil
}

// readSchema reads events.yaml and types.yaml of dir as they are (no checks); nil
// when there are none.
func readSchema(dir string) (*genmodel.Schema, error) {
	s := &genmodel.Schema{}
	for _, f := range []struct {
		name string
		doc  any
	}{{genmodel.EventsFile, s}, {genmodel.TypesFile, s}} {
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, f.doc); err != nil {
			return nil, yamlError(filepath.Join(dir, f.name), data, err)
		}
	}
	return s, nil
}

// checkLoads checks the new files as the generator will load them, in
// memory (genmodel.Parse), with the contract list of dir: references resolve
// and no contract name is missing.
func checkLoads(dir string, events, types []byte) (*genmodel.Schema, error) {
	contract, err := os.ReadFile(filepath.Join(dir, genmodel.ContractFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return genmodel.Parse(dir+" (as imported)", events, types, contract)
}

// checkFiles is -check: it compares each pending file with the one on disk
// and names those that differ (or are missing).
func checkFiles(pending []pendingFile, stderr io.Writer) int {
	stale := 0
	for _, f := range pending {
		old, err := os.ReadFile(f.path)
		if err == nil && bytes.Equal(old, f.data) {
			continue
		}
		stale++
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "importschema: %v\n", err)
			continue
		}
		fmt.Fprintf(stderr, "importschema: %s is not what the import makes of the spec and overrides: run make schema\n", f.path)
	}
	if stale > 0 {
		return 1
	}
	return 0
}

// onChecked, when set (by tests), is given the schema the import built and
// the one checkLoads parsed from its encoding, before anything is written.
var onChecked func(built, checked *genmodel.Schema)

// writeReports writes the Markdown and JSON reports where asked.
func writeReports(rep *Report, md, js string, stderr io.Writer) error {
	if md == "-" {
		fmt.Fprint(stderr, rep.Markdown())
	} else if md != "" {
		if err := os.WriteFile(md, []byte(rep.Markdown()), 0o644); err != nil {
			return err
		}
	}
	if js != "" {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(js, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// changelogHeader starts a new CHANGELOG.md.
const changelogHeader = "# Changelog\n\nWhat changed in the typed payloads (package payloads) with each update of the\n" +
	"forge's published webhook spec, newest first. `make schema VERSION=x` writes each\nsection (cmd/importschema -changelog).\n"

// insertChangelog returns the changelog with section put before its first "## "
// section (newest first); a missing file starts with changelogHeader.
func insertChangelog(path, section string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = []byte(changelogHeader), nil
	}
	if err != nil {
		return nil, err
	}
	s := string(data)
	if i := strings.Index(s, "\n## "); i >= 0 {
		return []byte(s[:i+1] + section + "\n" + s[i+1:]), nil
	}
	return []byte(strings.TrimRight(s, "\n") + "\n\n" + section), nil
}

func header(rec *record) string {
	from := "the published webhook spec"
	if rec != nil {
		from = fmt.Sprintf("%s %s (%s)", rec.Package, rec.Version, rec.File)
		if rec.Rest != nil {
			from += fmt.Sprintf(" and %s %s (x-webhooks)", rec.Rest.Package, rec.Rest.Version)
		}
	}
	return "# Code generated by cmd/importschema from " + from + ". DO NOT EDIT.\n" +
		"# Change schema/overrides.yaml (or the importer) and re-run it instead.\n"
}

// result is an import's schema and its figures.
type result struct {
	schema    *genmodel.Schema
	stats     stats
	overrides int
	fromSpec  int // names from the spec alone
	noops     []string
	lock      *lock // the lock extended with this import
	// pointerBreaks lists members the lock has as values that are now pointers.
	pointerBreaks []string
}

func (r *result) summary() string {
	var structs, enums, unions int
	for _, t := range r.schema.Types {
		switch t.Kind {
		case genmodel.KindStruct:
			structs++
		case genmodel.KindEnum:
			enums++
		case genmodel.KindUnion:
			unions++
		}
	}
	names, payloads := 0, map[string]bool{}
	for _, e := range r.schema.Events {
		names += 1 + len(e.Actions)
		payloads[e.Type] = true
		for _, a := range e.Actions {
			payloads[a.Type] = true
		}
	}
	delete(payloads, "")
	return fmt.Sprintf("%d events, %d names (%d from the spec); %d types: %d structs (%d payloads, %d shared), %d enums, %d unions; "+
		"%d object schemas besides payloads, %d distinct shapes; %d overrides",
		len(r.schema.Events), names, r.fromSpec, len(r.schema.Types), structs, len(payloads), structs-len(payloads), enums, unions,
		r.stats.objectNodes, r.stats.exactShapes, r.overrides)
}

// importSpec is the importer without files: spec JSON in, schema out.
// The lock gives the names it knows and pins the pointers it recorded; the result
// holds the lock extended with what this import named.
func importSpec(data []byte, rec *record, ov *overrides, lk *lock, warn func(string, ...any)) (*result, error) {
	return importSpecMode(data, rec, ov, lk, warn, false)
}

// importSpecMode is importSpec; lenient is for a server variant's spec (see
// model.lenient).
func importSpecMode(data []byte, rec *record, ov *overrides, lk *lock, warn func(string, ...any), lenient bool) (*result, error) {
	if lk == nil {
		lk = newLock(nil)
	}
	root, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	c, err := newConverter(root, warn)
	if err != nil {
		return nil, err
	}
	hooks, err := readHooks(root, c)
	if err != nil {
		return nil, err
	}
	m, err := buildModel(c, hooks, warn)
	if err != nil {
		return nil, err
	}
	m.lenient = lenient
	m.freeForm = map[string]*bool{}
	for _, f := range ov.FreeForm {
		m.freeForm[f.At] = new(bool)
	}
	if err := m.computeMatches(); err != nil {
		return nil, err
	}
	if !lenient {
		for _, f := range ov.FreeForm {
			if !*m.freeForm[f.At] {
				warn("override has no effect: free_form %s: no union there that the importer cannot tell apart", f.At)
			}
		}
	}
	renamed, sites, err := m.assignNames(ov.renameMap(), lk)
	if err != nil {
		return nil, err
	}
	s := m.schema(rec)
	siteOf := map[string]string{}
	for cl, site := range sites {
		siteOf[cl.name] = site
	}
	fromSpec := 0
	for _, e := range s.Events {
		fromSpec += 1 + len(e.Actions)
	}
	warns, err := ov.apply(s, renamed)
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		warn("%s", w)
	}
	for _, e := range s.Events {
		for _, a := range e.Actions {
			if siteOf[a.Type] == "" {
				siteOf[a.Type] = e.Name + "." + a.Name // a payload that overrides add
			}
		}
	}
	pointerBreaks := lk.pin(s)
	version := ""
	if rec != nil {
		version = rec.Version
	}
	n := len(ov.Names) + len(ov.Renames) + len(ov.FieldNames) + len(ov.EnumValues) + len(ov.Types) + len(ov.Fields) + len(ov.Optional) + len(ov.Required)
	return &result{schema: s, stats: m.stats, overrides: n, fromSpec: fromSpec, noops: warns,
		lock: lk.extend(s, siteOf, version), pointerBreaks: pointerBreaks}, nil
}

// importAll imports the main spec with the lock, then each variant with the lock
// the main import extended (read-only, so that a type has one name in all), and
// records in the schema what each variant lacks.
func importAll(data []byte, variants map[string][]byte, rec *record, ov *overrides, lk *lock, warn func(string, ...any)) (*result, error) {
	res, err := importSpec(data, rec, ov, lk, warn)
	if err != nil {
		return nil, err
	}
	// Overrides apply to a variant as far as they can (renames need not: the lock
	// names its types); one that fails there is left out for all of them.
	vov := *ov
	vov.Renames = nil
	vs := map[string]*genmodel.Schema{}
	for _, name := range sortedKeys(variants) {
		r, err := importSpecMode(variants[name], nil, &vov, res.lock, func(string, ...any) {}, true)
		if err != nil {
			r, err = importSpecMode(variants[name], nil, &overrides{}, res.lock, func(string, ...any) {}, true)
		}
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", name, err)
		}
		vs[name] = r.schema
	}
	if len(vs) > 0 {
		markVariants(res.schema, vs)
	}
	if err := genmodel.Check(res.schema); err != nil {
		return nil, fmt.Errorf("the import is not a valid schema: %w", err)
	}
	return res, nil
}

// restVersion is the record's second-source version, or "".
func restVersion(rec *record) string {
	if rec == nil || rec.Rest == nil {
		return ""
	}
	return rec.Rest.Version
}
