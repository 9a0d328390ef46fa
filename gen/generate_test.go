package gen

import (
	"bytes"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const (
	fixtureDir = "testdata/fixture"
	goldenDir  = "testdata/golden"
)

func generateFixture(t *testing.T) []File {
	t.Helper()
	s, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(s, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestGolden compares the generator's output for the fixture schema (a union, an
// enum of strings and one of integers, nullable fields, maps, timestamps, free-form
// actions) with the committed files. go test ./gen -update rewrites them.
func TestGolden(t *testing.T) {
	files := generateFixture(t)
	if *update {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, f := range files {
		// internal/group1/types.go is internal_group1_types.go.golden.
		name := strings.ReplaceAll(f.Name, "/", "_") + ".golden"
		path := filepath.Join(goldenDir, name)
		names = append(names, name)
		if *update {
			if err := os.WriteFile(path, f.Content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./gen -update)", err)
		}
		if d := cmp.Diff(string(want), string(f.Content)); d != "" {
			t.Errorf("%s differs from %s (-want +got):\n%s", f.Name, path, d)
		}
		if !bytes.HasPrefix(f.Content, []byte("// "+Header+"\n")) {
			t.Errorf("%s does not start with the generated-code header", f.Name)
		}
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
	}
	sort.Strings(have)
	if d := cmp.Diff(names, have); d != "" {
		t.Errorf("golden files (-generated +committed):\n%s", d)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := generateFixture(t), generateFixture(t)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("two runs differ:\n%s", d)
	}
}

func TestGenerateRejects(t *testing.T) {
	base := func() *Schema {
		s, err := Load(fixtureDir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		change func(s *Schema)
		want   string
	}{
		{"a type takes a generated function's name", func(s *Schema) {
			s.Types = append(s.Types, Type{Name: "Parse", Kind: KindStruct})
			s.Types[0].Fields = append(s.Types[0].Fields, Field{JSON: "p", Type: "Parse"})
		}, `Go name Parse of type "Parse" is already a function of names.go`},
		{"two keys give one Go name", func(s *Schema) {
			s.Types[0].Fields = append(s.Types[0].Fields, Field{JSON: "ID", Type: "string"})
		}, `json keys "id" and "ID" both give the Go name ID`},
		{"a key gives no Go name", func(s *Schema) {
			s.Types[0].Fields = append(s.Types[0].Fields, Field{JSON: "1st", Type: "string"})
		}, `"1st" gives no exported Go name`},
		{"an enum constant takes a type's name", func(s *Schema) {
			for i := range s.Types {
				if s.Types[i].Name == "IssueState" {
					s.Types[i].Values = append(s.Types[i].Values, EnumValue{Value: "x", Name: "Text"})
				}
			}
			s.Types = append(s.Types, Type{Name: "IssueStateText", Kind: KindStruct})
			s.Types[0].Fields = append(s.Types[0].Fields, Field{JSON: "t", Type: "IssueStateText"})
		}, "Go name IssueStateText"},
		{"a field takes a getter's name", func(s *Schema) {
			for i := range s.Types {
				if s.Types[i].Name == "IssuesOpenedEvent" {
					s.Types[i].Fields = append(s.Types[i].Fields, Field{JSON: "get_sender", Type: "string"})
				}
			}
		}, "field GetSender (json \"get_sender\") has the name of a method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(s)
			_, err := Generate(s, DefaultOptions)
			var ge *GenerateError
			if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"id": "ID", "node_id": "NodeID", "html_url": "HTMLURL", "ssh_url": "SSHURL", "sha": "SHA",
		"api_url": "APIURL", "_links": "Links", "+1": "Plus1", "-1": "Minus1", "ids": "IDs",
		"repository_urls": "RepositoryURLs", "createdAt": "CreatedAt", "nodeId": "NodeID",
		"pull_request": "PullRequest", "sample.collected": "SampleCollected", "on-demand-test": "OnDemandTest",
		"github_app_authorization": "GithubAppAuthorization", "gpg_key": "GPGKey", "cvss_v3": "CVSSV3",
		"spdx_id": "SPDXID", "insecure_ssl": "InsecureSSL", "sha256": "SHA256", "md5": "MD5",
		"ldap_dn": "LDAPDN", "commit_oid": "CommitOID", "epss": "EPSS",
	} {
		got, err := GoName(in)
		if err != nil || got != want {
			t.Errorf("GoName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "_", "1st", "2-factor", "中文", "ß_x"} {
		if got, err := GoName(in); err == nil {
			t.Errorf("GoName(%q) = %q, want an error", in, got)
		}
	}
}

// TestFixturePackage compiles the fixture's generated code together with package
// payloads' hand-written files in a scratch module, and runs the tests of
// testdata/fixturetest there, with payloads' own dispatch tests.
func TestFixturePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a scratch module")
	}
	root, err := filepath.Abs(filepath.Join(".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile := func(src, dst string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join(root, "go.mod"), filepath.Join(dir, "go.mod"))
	copyFile(filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"))
	// The module's packages that payloads needs (emitter and what it imports).
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "forgehooks.dev/forgehooks/emitter").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkgDir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, pkgDir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(pkgDir, "*.go"))
		for _, m := range matches {
			if !strings.HasSuffix(m, "_test.go") {
				copyFile(m, filepath.Join(dir, rel, filepath.Base(m)))
			}
		}
	}
	// payloads: the hand-written files (its own and codec's), the fixture's
	// generated ones, tests.
	pkg := filepath.Join(dir, "payloads")
	runtime, _ := filepath.Glob(filepath.Join(root, "payloads", "codec", "*.go"))
	for _, m := range runtime {
		if !strings.HasSuffix(m, "_test.go") {
			copyFile(m, filepath.Join(pkg, "codec", filepath.Base(m)))
		}
	}
	matches, _ := filepath.Glob(filepath.Join(root, "payloads", "*.go"))
	for _, m := range matches {
		generated, err := isGenerated(m)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(m)
		if generated || base == "generate.go" || strings.HasSuffix(base, "_test.go") && base != "helpers_test.go" && base != "dispatch_test.go" {
			continue
		}
		copyFile(m, filepath.Join(pkg, base))
	}
	tests, _ := filepath.Glob("testdata/fixturetest/*_test.go")
	for _, m := range tests {
		copyFile(m, filepath.Join(pkg, filepath.Base(m)))
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(pkg, generateFixture(t)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"vet", "./payloads/..."}, {"test", "-race", "-count=1", "./payloads"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s in the fixture module: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("go %s: %s", strings.Join(args, " "), bytes.TrimSpace(out))
		}
	}
}

func TestEnumValueName(t *testing.T) {
	for in, want := range map[string]string{
		"open": "Open", "off-topic": "OffTopic", "too heated": "TooHeated", "*": "Wildcard",
		"+1": "Plus1", "1": "Value1", "": "Empty", "2fa": "Value2fa", "@": "At",
	} {
		if got := enumValueName(in); got != want {
			t.Errorf("enumValueName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnumSuffixes(t *testing.T) {
	values := []EnumValue{{Value: "FLAT_RATE"}, {Value: "flat-rate"}, {Value: "free"}, {Value: "Free"}, {Value: "x", Name: "Named"}}
	want := []string{"FlatRateUpper", "FlatRate", "Free", "Free2", "Named"}
	if d := cmp.Diff(want, enumSuffixes(values)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDocWrapsParagraphsAndKeepsLists(t *testing.T) {
	in := "The repository where the event occurred. Webhook payloads contain the `repository` property\nwhen the event occurs from activity in a repository.\n\nOne of:\n- `open`\n- `closed`\n1. first\n2. second"
	want := "// The repository where the event occurred. Webhook payloads contain the\n" +
		"// `repository` property when the event occurs from activity in a repository.\n" +
		"//\n// One of:\n// - `open`\n// - `closed`\n// 1. first\n// 2. second"
	var b strings.Builder
	if err := doc(in).Render(&b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestHandWrittenNamesAreFree checks that nothing generated from the
// committed schema takes a name that package payloads' hand-written files
// declare: it reads those files' top-level names and the generated files',
// and reports any name both have, with the file of each.
func TestHandWrittenNamesAreFree(t *testing.T) {
	s, err := Load(filepath.Join("..", "schema"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(s, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.Contains(f.Name, "/") {
			continue // another package
		}
		af, err := parser.ParseFile(fset, f.Name, f.Content, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range topLevelNames(af) {
			generated[n] = f.Name
		}
	}
	paths, _ := filepath.Glob(filepath.Join("..", "payloads", "*.go"))
	handWritten := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		if gen, err := isGenerated(path); err != nil || gen {
			continue
		}
		af, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		handWritten++
		for _, n := range topLevelNames(af) {
			if g, ok := generated[n]; ok {
				t.Errorf("%s is declared by hand in %s and generated in %s", n, filepath.Base(path), g)
			}
		}
	}
	if handWritten == 0 || len(generated) < 1000 {
		t.Fatalf("read %d hand-written files and %d generated names: the check checks nothing", handWritten, len(generated))
	}
}

// topLevelNames returns the package-level names a file declares (types,
// functions, variables, constants; not methods).
func topLevelNames(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					out = append(out, sp.Name.Name)
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// TestDeclarations: every declaration Declarations lists is in the code
// Generate writes, in the package it names, and the list has every kind.
func TestDeclarations(t *testing.T) {
	s, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	decls, err := Declarations(s, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(s, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	code := map[string]string{} // package path → its files
	for _, f := range files {
		dir := filepath.Dir(f.Name)
		pkg := DefaultOptions.PackagePath
		if dir != "." {
			pkg += "/" + filepath.ToSlash(dir)
		}
		code[pkg] += string(f.Content)
	}
	kinds := map[string]int{}
	for _, d := range decls {
		kinds[d.Kind]++
		name := d.Name[strings.LastIndex(d.Name, ".")+1:]
		var want string
		switch d.Kind {
		case "func":
			want = "func " + name + "("
		case "type":
			want = "type " + name + " "
		case "method":
			want = ") " + name + "("
		case "field", "const":
			want = "\t" + name + " "
		}
		if !strings.Contains(code[d.Package], want) {
			t.Errorf("%s: %q is not in the code of %s", d, want, d.Package)
		}
	}
	for _, k := range []string{"func", "type", "field", "method", "const"} {
		if kinds[k] == 0 {
			t.Errorf("no declaration of kind %s in %d", k, len(decls))
		}
	}
}
